//! git's commands for reading history as text: blame, grep, describe,
//! shortlog, rev-list. Each prints what git 2.39 prints, where a script
//! would parse it; ids are DMV's (64 hex digits, 12 when short).

use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use dmv_repo::store::object::Signature;
use dmv_repo::store::ObjectId;
use dmv_repo::{Description, GrepEvent, GrepOptions, GrepPattern, GrepRequest, PatternSyntax};

use crate::repo_args::{open_repo, printable, repo_paths, show_path};

/// Versions a blame fetches at most in one batch in a partial replica.
const BLAME_FETCH_VERSIONS: usize = 10_000;

#[derive(Args)]
#[command(override_usage = "dmv blame [--porcelain] [-L START,END]… [REV] [--] FILE")]
pub struct BlameArgs {
    /// [REV] FILE: the file as of REV (default: the working file, its
    /// lines not committed yet shown as git shows them; HEAD in a bare replica).
    #[arg(value_name = "REV|FILE", num_args = 0..=2)]
    args: Vec<String>,
    /// The file, after `--`.
    #[arg(last = true, value_name = "FILE")]
    file: Vec<PathBuf>,
    /// git's porcelain format: for each group of lines, the full commit id,
    /// the line's number in that commit and now and the group's length; the
    /// commit's author, committer, summary, boundary, previous and filename
    /// the first time it is named; then each line after a tab.
    #[arg(long)]
    porcelain: bool,
    /// Only these lines: START,END, START,+COUNT, START,-COUNT, START (to
    /// the end) or ,END; line numbers from 1. Given more than once, each range.
    #[arg(short = 'L', value_name = "START,END", allow_hyphen_values = true)]
    ranges: Vec<String>,
}

/// Each line of a text file with the commit that last changed it, as `git blame` shows it.
pub fn blame(a: BlameArgs) -> Result<u8> {
    let repo = open_repo()?;
    let (rev, file) = match (a.args.as_slice(), a.file.as_slice()) {
        ([], [file]) => (None, file.clone()),
        ([rev], [file]) => (Some(rev.clone()), file.clone()),
        ([file], []) => (None, PathBuf::from(file)),
        ([rev, file], []) => (Some(rev.clone()), PathBuf::from(file)),
        _ => bail!("usage: dmv blame [--porcelain] [-L START,END] [REV] [--] FILE"),
    };
    // As git: without a revision, the working file; a bare replica has none, HEAD's then.
    let worktree = rev.is_none() && !repo.config.bare;
    let rev = rev.unwrap_or_else(|| "HEAD".to_string());
    let path = repo_paths(&repo, &[file])?.remove(0);
    // A partial replica fetches the versions it lacks first, as `cat` does.
    if repo.is_partial() {
        let versions = match worktree {
            // The working file may be new: HEAD then has no versions of it to fetch.
            true => repo
                .history()
                .blame_versions(&rev, &path, BLAME_FETCH_VERSIONS)
                .unwrap_or_default(),
            false => repo
                .history()
                .blame_versions(&rev, &path, BLAME_FETCH_VERSIONS)?,
        };
        let mut absent = Vec::new();
        for (p, e) in versions {
            if repo.copies().is_absent(&e)? {
                absent.push((p, e));
            }
        }
        if !absent.is_empty() {
            dmv_sync::fetch_versions(&repo, absent, &dmv_sync::Silent)?;
        }
    }
    let blame = match worktree {
        true => repo.history().blame_worktree(&path)?,
        false => repo.history().blame(&rev, &path)?,
    };
    let spans = blame.spans(&a.ranges, &path)?;
    let mailmap = repo.history().mailmap()?;
    if let Some(why) = mailmap.refusal() {
        eprintln!("warning: {}", printable(why));
    }
    let people = |s: &Signature| -> Signature {
        let (name, email) = mailmap.map(&s.name, &s.email);
        Signature {
            name: name.to_string(),
            email: email.to_string(),
            ..s.clone()
        }
    };
    let _pager = crate::terminal::start_pager(&repo);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match a.porcelain {
        true => print_porcelain(&mut out, &blame, &spans, &people)?,
        false => print_blame(&mut out, &blame, &path, &spans, &people)?,
    }
    out.flush()?;
    Ok(0)
}

/// git's default blame: `id (author date line) text`, the id `^`-marked
/// for a root commit's lines, a file name column when lines came from
/// another name; widths as the lines shown need them.
fn print_blame(
    out: &mut impl Write,
    blame: &dmv_repo::Blame,
    path: &[u8],
    spans: &[Range<usize>],
    people: &dyn Fn(&Signature) -> Signature,
) -> Result<()> {
    let shown: Vec<usize> = spans.iter().flat_map(|s| s.clone()).collect();
    let commit_of = |i: usize| &blame.commits[&blame.origins[i].commit];
    // git shows ids one digit longer than its abbreviation, so a boundary's `^` fits.
    let width = blame
        .origins
        .first()
        .map_or(13, |o| o.commit.short().len() + 1);
    let show_names = shown.iter().any(|&i| commit_of(i).path != path);
    let longest_name = shown
        .iter()
        .map(|&i| show_path(&commit_of(i).path).chars().count())
        .max()
        .unwrap_or(0);
    let longest_author = shown
        .iter()
        .map(|&i| people(&commit_of(i).commit.author).name.chars().count())
        .max()
        .unwrap_or(0);
    let digits = shown.last().map_or(1, |i| (i + 1).to_string().len());
    for i in shown {
        let origin = &blame.origins[i];
        let c = &blame.commits[&origin.commit];
        let hex = origin.commit.to_hex();
        match c.boundary {
            true => write!(out, "^{}", &hex[..width - 1])?,
            false => write!(out, "{}", &hex[..width])?,
        }
        if show_names {
            write!(out, " {:<longest_name$}", show_path(&c.path))?;
        }
        let author = people(&c.commit.author);
        let pad = longest_author - author.name.chars().count();
        write!(
            out,
            " ({}{} {} {:>digits$}) ",
            author.name,
            " ".repeat(pad),
            iso_date(&author),
            i + 1
        )?;
        out.write_all(blame.line(i))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// git's `blame --porcelain`.
fn print_porcelain(
    out: &mut impl Write,
    blame: &dmv_repo::Blame,
    spans: &[Range<usize>],
    people: &dyn Fn(&Signature) -> Signature,
) -> Result<()> {
    let mut told = std::collections::HashSet::new();
    for span in spans {
        let mut i = span.start;
        while i < span.end {
            let first = blame.origins[i];
            // A group: lines of one commit, following each other there too.
            let mut n = 1;
            while i + n < span.end
                && blame
                    .origins
                    .get(i + n)
                    .is_some_and(|o| o.commit == first.commit && o.line == first.line + n)
            {
                n += 1;
            }
            let hex = first.commit.to_hex();
            let c = &blame.commits[&first.commit];
            for k in 0..n {
                match k {
                    0 => writeln!(out, "{hex} {} {} {n}", first.line, i + 1)?,
                    _ => writeln!(out, "{hex} {} {}", first.line + k, i + k + 1)?,
                }
                if k == 0 && told.insert(first.commit) {
                    let (a, m) = (people(&c.commit.author), people(&c.commit.committer));
                    writeln!(out, "author {}", a.name)?;
                    writeln!(out, "author-mail <{}>", a.email)?;
                    writeln!(out, "author-time {}", a.time)?;
                    writeln!(out, "author-tz {}", tz(a.tz_minutes))?;
                    writeln!(out, "committer {}", m.name)?;
                    writeln!(out, "committer-mail <{}>", m.email)?;
                    writeln!(out, "committer-time {}", m.time)?;
                    writeln!(out, "committer-tz {}", tz(m.tz_minutes))?;
                    let summary = c
                        .commit
                        .message
                        .lines()
                        .find(|l| !l.trim().is_empty())
                        .map_or_else(|| format!("({hex})"), str::to_string);
                    writeln!(out, "summary {summary}")?;
                    if c.boundary {
                        writeln!(out, "boundary")?;
                    }
                    if let Some((parent, before)) = &c.previous {
                        writeln!(out, "previous {parent} {}", show_path(before))?;
                    }
                    writeln!(out, "filename {}", show_path(&c.path))?;
                }
                out.write_all(b"\t")?;
                out.write_all(blame.line(i + k))?;
                out.write_all(b"\n")?;
            }
            i += n;
        }
    }
    Ok(())
}

/// A time offset as git writes it: `+0100`, `-0700`.
fn tz(minutes: i16) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    let m = minutes.unsigned_abs();
    format!("{sign}{:02}{:02}", m / 60, m % 60)
}

/// `2026-11-28 14:00:00 +0100`: the signature's time where it was made.
fn iso_date(s: &Signature) -> String {
    let (y, mo, d, h, mi, sec) = dmv_repo::civil(s.time + i64::from(s.tz_minutes) * 60);
    format!(
        "{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{sec:02} {}",
        tz(s.tz_minutes)
    )
}

#[derive(Args)]
#[command(
    override_usage = "dmv grep [-n] [-i] [-l] [-c] [-w] [-v] [-q] [-F|-E|-G] (PATTERN | -e PATTERN…) [REV…] [-- PATH…]"
)]
pub struct GrepArgs {
    /// What to look for (unless -e gives it): a POSIX basic regular
    /// expression (git's default), or as -E or -F say; then revisions whose
    /// files to search (default: the working tree's tracked files), then
    /// paths (files or folders), as git takes them.
    #[arg(value_name = "PATTERN|REV|PATH")]
    rest: Vec<String>,
    /// A pattern; given more than once, a line matching any of them matches.
    #[arg(short = 'e', value_name = "PATTERN", allow_hyphen_values = true)]
    patterns: Vec<String>,
    /// Lines that do not match.
    #[arg(short = 'v', long = "invert-match")]
    invert_match: bool,
    /// Print nothing: the exit status says whether anything matched (0) or not (1).
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// Only these files or folders.
    #[arg(last = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Each line's number after its file's name.
    #[arg(short = 'n', long = "line-number")]
    line_number: bool,
    /// Letters match either case.
    #[arg(short = 'i', long = "ignore-case")]
    ignore_case: bool,
    /// Only the names of the files that match.
    #[arg(short = 'l', long = "files-with-matches", alias = "name-only")]
    files_with_matches: bool,
    /// Each matching file's name and how many lines matched.
    #[arg(short = 'c', long = "count")]
    count: bool,
    /// Only matches that are whole words.
    #[arg(short = 'w', long = "word-regexp")]
    word_regexp: bool,
    /// The pattern is text, not an expression.
    #[arg(short = 'F', long = "fixed-strings", conflicts_with_all = ["extended_regexp", "basic_regexp"])]
    fixed_strings: bool,
    /// The pattern is a POSIX extended regular expression.
    #[arg(short = 'E', long = "extended-regexp", conflicts_with = "basic_regexp")]
    extended_regexp: bool,
    /// The pattern is a POSIX basic regular expression (the default).
    #[arg(short = 'G', long = "basic-regexp")]
    basic_regexp: bool,
}

/// Lines of tracked files (or of a revision's files) that match a pattern, as `git grep` prints them.
pub fn grep(a: GrepArgs) -> Result<u8> {
    let repo = open_repo()?;
    let syntax = match (a.fixed_strings, a.extended_regexp) {
        (true, _) => PatternSyntax::Fixed,
        (_, true) => PatternSyntax::Extended,
        _ => PatternSyntax::Basic,
    };
    // Without -e, the first argument is the pattern.
    let (patterns, rest) = match (a.patterns.is_empty(), a.rest.split_first()) {
        (false, _) => (a.patterns.clone(), a.rest.as_slice()),
        (true, Some((first, rest))) => (vec![first.clone()], rest),
        (true, None) => bail!("no pattern given (dmv grep PATTERN, or -e PATTERN)"),
    };
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    let pattern = GrepPattern::new_many(
        &patterns,
        GrepOptions {
            syntax,
            ignore_case: a.ignore_case,
            whole_words: a.word_regexp,
            invert: a.invert_match,
        },
    )?;
    // As git: revisions first, then from the first argument that is none, paths.
    let mut revs = Vec::new();
    let mut named = a.paths.clone();
    for arg in rest {
        if named.len() == a.paths.len() && repo.resolve(arg).is_ok() {
            revs.push(arg.clone());
        } else {
            named.push(PathBuf::from(arg));
        }
    }
    let cwd = std::env::current_dir()?;
    // Paths print relative to the current folder, and without paths only what is under it is searched.
    let here = repo.repo_path(&cwd, std::path::Path::new("."))?;
    let mut paths = repo_paths(&repo, &named)?;
    if paths.is_empty() && !here.is_empty() {
        paths.push(here.clone());
    }
    if paths.iter().any(|p| p.is_empty()) {
        paths.clear();
    }
    let request = GrepRequest {
        pattern: &pattern,
        paths: &paths,
        first_only: a.files_with_matches || a.quiet,
        first_file_only: a.quiet,
    };
    let _pager = crate::terminal::start_pager(&repo);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut matched = false;
    let mut absent = 0;
    let mut too_long = Vec::new();
    let sides: Vec<Option<&String>> = match revs.is_empty() {
        true => vec![None],
        false => revs.iter().map(Some).collect(),
    };
    for rev in sides {
        let name = |path: &[u8]| {
            let shown = show_path(&relative(path, &here));
            match rev {
                Some(r) => format!("{r}:{shown}"),
                None => shown,
            }
        };
        let mut sink = |event: GrepEvent<'_>| -> dmv_repo::RepoResult<()> {
            let io = |e: std::io::Error| dmv_repo::RepoError::io("standard output", e);
            match event {
                GrepEvent::Line { .. } if a.quiet => {}
                GrepEvent::File { .. } if a.quiet => matched = true,
                GrepEvent::Line { path, number, text } if !a.count => {
                    let mut head = name(path);
                    if a.line_number {
                        head.push_str(&format!(":{number}"));
                    }
                    write!(out, "{head}:").map_err(io)?;
                    out.write_all(text).map_err(io)?;
                    out.write_all(b"\n").map_err(io)?;
                }
                GrepEvent::Line { .. } => {}
                GrepEvent::File { path, found } => {
                    matched = true;
                    if a.files_with_matches {
                        writeln!(out, "{}", name(path)).map_err(io)?;
                    } else if a.count {
                        writeln!(out, "{}:{}", name(path), found.matches).map_err(io)?;
                    } else if found.binary {
                        writeln!(out, "Binary file {} matches", name(path)).map_err(io)?;
                    }
                }
            }
            Ok(())
        };
        let summary = match rev {
            Some(r) => {
                let commit = repo.resolve(r)?;
                repo.history().grep_commit(&commit, &request, &mut sink)?
            }
            None => {
                repo.require_worktree()?;
                repo.history().grep_worktree(&request, &mut sink)?
            }
        };
        absent += summary.absent;
        too_long.extend(summary.too_long.iter().map(|p| name(p)));
        if a.quiet && matched {
            break;
        }
    }
    out.flush()?;
    drop(out);
    for file in too_long {
        eprintln!(
            "warning: {file} has a line longer than {} MiB: searched up to it",
            dmv_repo::MAX_GREP_LINE >> 20
        );
    }
    if absent > 0 {
        eprintln!(
            "warning: {absent} file{} whose data is not in this replica {} not searched (`dmv get` fetches data)",
            if absent == 1 { "" } else { "s" },
            if absent == 1 { "was" } else { "were" }
        );
    }
    Ok(if matched { 0 } else { 1 })
}

/// `path` relative to the folder `here` (both repository paths), with
/// `../` for each folder it climbs out of.
fn relative(path: &[u8], here: &[u8]) -> Vec<u8> {
    if here.is_empty() {
        return path.to_vec();
    }
    let here: Vec<&[u8]> = here.split(|b| *b == b'/').collect();
    let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
    // The file's own name always stays.
    let common = here
        .iter()
        .zip(&parts)
        .take_while(|(a, b)| a == b)
        .count()
        .min(parts.len() - 1);
    let mut out = b"../".repeat(here.len() - common);
    out.extend(parts[common..].join(&b'/'));
    out
}

#[derive(Args)]
pub struct DescribeArgs {
    /// The commit to name (default HEAD).
    rev: Option<String>,
    /// Lightweight tags count too (by default only annotated ones).
    #[arg(long)]
    tags: bool,
    /// With no tag to name it by, the commit's short id.
    #[arg(long)]
    always: bool,
    /// Show N hex digits of the commit's id (default 12, DMV's short id; 0: the tag's name alone).
    #[arg(long, value_name = "N")]
    abbrev: Option<usize>,
    /// TAG-COUNT-gID even when the tag names the commit itself.
    #[arg(long)]
    long: bool,
    /// Add MARK (default `-dirty`) when tracked files differ from HEAD (the working tree's commit is described).
    #[arg(long, value_name = "MARK", num_args = 0..=1, require_equals = true, default_missing_value = "-dirty")]
    dirty: Option<String>,
    /// Only tags whose name matches this glob (`v*`); given more than once, any of them.
    #[arg(long = "match", value_name = "GLOB")]
    matching: Vec<String>,
    /// No tag whose name matches this glob; given more than once, none of them.
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
}

/// The nearest tag of a commit, as `git describe` names it: TAG, or TAG-COUNT-gID with COUNT commits on top.
pub fn describe(a: DescribeArgs) -> Result<u8> {
    if a.long && a.abbrev == Some(0) {
        bail!("options '--long' and '--abbrev=0' cannot be used together");
    }
    if a.dirty.is_some() && a.rev.is_some() {
        bail!("option '--dirty' and commit-ishes cannot be used together");
    }
    let repo = open_repo()?;
    let rev = a.rev.as_deref().unwrap_or("HEAD");
    let commit = repo.resolve(rev)?;
    // As git's: tracked files changed (staged or not) make the tree dirty; untracked ones do not.
    let mark = match &a.dirty {
        Some(mark) => {
            let status = repo.status()?;
            match status.staged.is_empty() && status.unstaged.is_empty() {
                true => "",
                false => mark.as_str(),
            }
        }
        None => "",
    };
    let digits = match a.abbrev {
        None => commit.short().len(),
        Some(0) => 0,
        Some(n) => n.clamp(4, 64),
    };
    let short = |id: &ObjectId| id.to_hex()[..digits.max(4)].to_string();
    let found = repo
        .history()
        .describe(&commit, a.tags, &a.matching, &a.exclude)?;
    match found {
        Description::Tag { name, depth, .. } if (depth == 0 && !a.long) || digits == 0 => {
            println!("{name}{mark}")
        }
        Description::Tag { name, depth, .. } => {
            println!("{name}-{depth}-g{}{mark}", short(&commit))
        }
        Description::Nothing { .. } if a.always => println!("{}{mark}", short(&commit)),
        Description::Nothing { any_tags: false, .. } => {
            bail!("No names found, cannot describe anything.")
        }
        Description::Nothing {
            lightweight_passed_over: true,
            ..
        } => bail!(
            "No annotated tags can describe '{commit}'. However, there were unannotated tags: try --tags."
        ),
        Description::Nothing { .. } => {
            bail!("No tags can describe '{commit}'. Try --always, or create some tags.")
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct ShortlogArgs {
    /// How many commits each author made, without their subjects.
    #[arg(short = 's', long = "summary")]
    summary: bool,
    /// Authors by how many commits they made, most first (by name otherwise).
    #[arg(short = 'n', long = "numbered")]
    numbered: bool,
    /// Each author's email beside the name.
    #[arg(short = 'e', long = "email")]
    email: bool,
    /// Whose history (default HEAD): revisions, `^REV`, ranges.
    revs: Vec<String>,
}

/// Commits grouped by author, with their subjects or counts, as `git shortlog` lists them.
pub fn shortlog(a: ShortlogArgs) -> Result<u8> {
    let repo = open_repo()?;
    let revs = match a.revs.is_empty() {
        true => vec!["HEAD".to_string()],
        false => a.revs.clone(),
    };
    let walk = repo.history().rev_walk(&revs, false)?;
    let mailmap = repo.history().mailmap()?;
    if let Some(why) = mailmap.refusal() {
        eprintln!("warning: {}", printable(why));
    }
    let mut groups = repo.history().shortlog(walk, a.email, &mailmap)?;
    if a.numbered {
        groups.sort_by_key(|g| std::cmp::Reverse(g.subjects.len()));
    }
    let _pager = crate::terminal::start_pager(&repo);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for g in &groups {
        let author = printable(&g.author);
        match a.summary {
            true => writeln!(out, "{:6}\t{author}", g.subjects.len())?,
            false => {
                writeln!(out, "{author} ({}):", g.subjects.len())?;
                for s in &g.subjects {
                    writeln!(out, "      {}", printable(s))?;
                }
                writeln!(out)?;
            }
        }
    }
    out.flush()?;
    Ok(0)
}

#[derive(Args)]
pub struct RevListArgs {
    /// Revisions whose history to list: REV, `^REV` (left out with its history), A..B, A...B.
    revs: Vec<String>,
    /// Only how many commits there are.
    #[arg(long)]
    count: bool,
    /// At most N commits (the newest).
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
    /// Oldest first (after --max-count took the newest).
    #[arg(long)]
    reverse: bool,
    /// The history of every branch, tag and remote branch, and of HEAD.
    #[arg(long)]
    all: bool,
}

/// The ids of the commits revisions reach, newest first, as `git rev-list` prints them.
pub fn rev_list(a: RevListArgs) -> Result<u8> {
    if a.revs.is_empty() && !a.all {
        eprintln!("usage: dmv rev-list [--count] [--max-count=N] [--reverse] [--all] REV…");
        return Ok(129);
    }
    let repo = open_repo()?;
    let walk = repo.history().rev_walk(&a.revs, a.all)?;
    let limited = walk.take(a.max_count.unwrap_or(usize::MAX));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if a.count {
        let mut n = 0usize;
        for c in limited {
            c?;
            n += 1;
        }
        writeln!(out, "{n}")?;
    } else if a.reverse {
        let ids = limited
            .map(|c| c.map(|c| c.id))
            .collect::<Result<Vec<_>, _>>()?;
        for id in ids.iter().rev() {
            writeln!(out, "{id}")?;
        }
    } else {
        for c in limited {
            writeln!(out, "{}", c?.id)?;
        }
    }
    out.flush()?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::{relative, tz};

    #[test]
    fn paths_print_relative_to_the_current_folder() {
        assert_eq!(relative(b"a/b.txt", b""), b"a/b.txt");
        assert_eq!(relative(b"sub/c.txt", b"sub"), b"c.txt");
        assert_eq!(relative(b"a.txt", b"sub"), b"../a.txt");
        assert_eq!(relative(b"sub/x/y", b"sub/z"), b"../x/y");
        assert_eq!(relative(b"top", b"a/b"), b"../../top");
    }

    #[test]
    fn offsets_read_as_gits() {
        assert_eq!(tz(0), "+0000");
        assert_eq!(tz(-420), "-0700");
        assert_eq!(tz(330), "+0530");
    }
}
