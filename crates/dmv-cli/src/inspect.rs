//! Read-only commands: log, show, diff, cat, ls-tree.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dmv_repo::store::object::EntryKind;
use dmv_repo::tree::{flatten, read_dir};
use dmv_repo::{diff_flat, human_bytes, Change, ChangeKind, DiffSide, FlatTree, Repository};

use crate::repo_args::{open_repo, printable, repo_paths, show_path};
use crate::terminal::{paint, paint_unified, Style};

#[derive(Args)]
pub struct LogArgs {
    /// Start from this revision (default HEAD).
    rev: Option<String>,
    /// Show at most N commits.
    #[arg(short = 'n', long = "max-count")]
    max_count: Option<usize>,
    /// One line per commit.
    #[arg(long)]
    oneline: bool,
    /// Each commit as this text, with git's placeholders: %H %h (commit id),
    /// %T %t (tree), %P %p (parents), %an %ae %ad %at %ar %as (author), %cn
    /// %ce %cd %ct %cr %cs (committer), %s (subject), %b (body), %B (the raw message), %n
    /// (newline), %%; or git's named formats oneline, short, medium, full, fuller.
    #[arg(long, alias = "pretty", value_name = "FORMAT")]
    format: Option<String>,
    /// After each commit, the files it changed and their sizes.
    #[arg(long)]
    stat: bool,
    /// With one path: go on through the renames that brought it there.
    #[arg(long)]
    follow: bool,
    /// After each commit, A, M or D and the path of each file it changed.
    #[arg(long)]
    name_status: bool,
    /// After each commit, its patch (as `dmv show`).
    #[arg(short = 'p', long = "patch")]
    patch: bool,
    /// Text changes word by word, as git's `--word-diff[=MODE]` shows them:
    /// plain (`[-removed-]{+added+}` within each line), color (red and
    /// green), porcelain (for scripts) or none.
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "plain", require_equals = true)]
    word_diff: Option<crate::word_diff::Mode>,
    /// Only commits whose author ("Name <email>") contains this text.
    #[arg(long)]
    author: Option<String>,
    /// Only commits whose message contains this text.
    #[arg(long)]
    grep: Option<String>,
    /// Only commits that change how many times this text occurs in a text file (git's pickaxe).
    #[arg(short = 'S', value_name = "STRING", allow_hyphen_values = true)]
    pickaxe: Option<String>,
    /// Only commits that take out or put in a line of a text file matching this extended regular expression.
    #[arg(short = 'G', value_name = "REGEX", allow_hyphen_values = true)]
    pickaxe_regex: Option<String>,
    /// Only commits made at or after this date: 2026-11-28, "2026-11-28 14:00", "2 weeks ago", yesterday, @SECONDS (UTC).
    #[arg(long, alias = "after", value_name = "DATE")]
    since: Option<String>,
    /// Only commits made at or before this date (as --since).
    #[arg(long, alias = "before", value_name = "DATE")]
    until: Option<String>,
    /// Draw the history as a graph of lines beside the commits.
    #[arg(long)]
    graph: bool,
    /// Beside each commit, the branches, tags and HEAD naming it:
    /// `(HEAD -> main, tag: v1)` (on a terminal without asking, as git's
    /// log.decorate=auto).
    #[arg(long, overrides_with = "no_decorate")]
    decorate: bool,
    /// No names beside the commits.
    #[arg(long)]
    no_decorate: bool,
    /// Start from every branch, remote-tracking branch and tag, and HEAD.
    #[arg(long)]
    all: bool,
    /// Oldest first.
    #[arg(long)]
    reverse: bool,
    /// After each commit, the paths it changed.
    #[arg(long)]
    name_only: bool,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    colour: crate::terminal::ColourArgs,
    /// Only commits that change these paths (files or folders): `dmv log -- PATH...`.
    #[arg(last = true)]
    paths: Vec<std::path::PathBuf>,
}

pub fn log(a: LogArgs) -> Result<u8> {
    let repo = open_repo()?;
    crate::diffstat::note_columns();
    let _pager = (!a.json)
        .then(|| a.colour.colour_and_pager(&repo))
        .flatten();
    crate::word_diff::colour_for(&repo, a.word_diff);
    // `dmv log PATH`, as git takes it: an argument that is no revision but a path here.
    let (revs, named_paths) = match &a.rev {
        Some(r) => revisions_then_paths(&repo, std::slice::from_ref(r))?,
        None => (Vec::new(), Vec::new()),
    };
    let mut json = Vec::new();
    let paths = repo_paths(&repo, &[a.paths.clone(), named_paths].concat())?;
    if a.follow && paths.len() != 1 {
        bail!("--follow takes exactly one path: dmv log --follow -- PATH");
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let date = |d: &Option<String>| -> Result<Option<i64>> {
        d.as_deref()
            .map(|t| dmv_repo::parse_date(t, now).ok_or_else(|| anyhow!("cannot read the date '{t}' (2026-11-28, \"2026-11-28 14:00\", \"2 weeks ago\", yesterday, @SECONDS)")))
            .transpose()
    };
    if a.pickaxe.is_some() && a.pickaxe_regex.is_some() {
        bail!("options '-G' and '-S' cannot be used together (as in git)");
    }
    // A graph is drawn children first: the whole history is read, then ordered.
    let query = dmv_repo::LogQuery {
        revision: revs.first().cloned(),
        paths: paths.clone(),
        follow: a.follow,
        since: date(&a.since)?,
        until: date(&a.until)?,
        author: a.author.clone(),
        grep: a.grep.clone(),
        changes_count_of: a.pickaxe.clone(),
        changes_lines_matching: a
            .pickaxe_regex
            .as_deref()
            .map(|r| {
                let extended = dmv_repo::GrepOptions {
                    syntax: dmv_repo::PatternSyntax::Extended,
                    ..Default::default()
                };
                dmv_repo::GrepPattern::new(r, extended)
            })
            .transpose()?,
        topo_order: a.graph,
        skip: 0,
        // The graph needs every commit the log would show (below).
        max_count: if a.graph { None } else { a.max_count },
        all: a.all,
        reverse: a.reverse,
    };
    let commits = repo.history().log(&query)?;
    if a.graph && a.reverse {
        bail!("log --reverse and --graph cannot be given together (as in git)");
    }
    // As git's log.decorate=auto: names on a terminal, none in a pipe, unless asked.
    let decorate = !a.no_decorate
        && !a.json
        && (a.decorate
            || (a.format.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdout())));
    let names = match decorate {
        true => repo.history().decorations()?,
        false => Default::default(),
    };
    let names_of = |id: &dmv_repo::store::ObjectId| -> String {
        names
            .get(id)
            .map(|n| format!(" {}", decoration_text(n)))
            .unwrap_or_default()
    };
    // As git's log.mailmap: names and emails as .mailmap gives them, in the layouts and in %aN, %aE, %cN, %cE.
    let people: Box<People<'_>> = match a.json {
        true => Box::new(|n: &str, e: &str| (n.to_string(), e.to_string())),
        false => Box::new(mailmap_people(&repo)?),
    };
    let mut graph = crate::log_graph::Graph::new(crate::terminal::painting());
    // git's layouts of several lines, and `format:`, put a newline between
    // commits; with --graph the graph draws it (beside the lanes).
    let separated = match a.format.as_deref() {
        None => !a.oneline,
        Some(f) => f.starts_with("format:") || ["short", "medium", "full", "fuller"].contains(&f),
    };
    // As git's graph: lanes lead only to parents the log shows (none to
    // the far end of a range, or to commits the filters leave out), and
    // -n only stops the drawing, so those are known before it.
    let mut shown_ids = crate::log_graph::ShownCommits::default();
    let commits: dmv_repo::LogCommits<'_> = match a.graph {
        true => {
            let all = commits.collect::<dmv_repo::RepoResult<Vec<_>>>()?;
            for c in &all {
                shown_ids.insert(c.id);
            }
            // git orders the whole history, then leaves out the commits
            // --author and --grep do not match: the graph keeps that order.
            let all = match (query.author.is_some() || query.grep.is_some()) && paths.is_empty() {
                true => {
                    let unfiltered = dmv_repo::LogQuery {
                        author: None,
                        grep: None,
                        ..query.clone()
                    };
                    let mut ordered = repo
                        .history()
                        .log(&unfiltered)?
                        .collect::<dmv_repo::RepoResult<Vec<_>>>()?;
                    ordered.retain(|c| shown_ids.contains(&c.id));
                    ordered
                }
                false => all,
            };
            Box::new(
                all.into_iter()
                    .take(a.max_count.unwrap_or(usize::MAX))
                    .map(Ok),
            )
        }
        false => commits,
    };
    let mut parents_shown = Vec::new();
    for (shown, info) in commits.enumerate() {
        let info = info?;
        let c = &info.commit;
        // With --graph every line of a commit is drawn after its lanes: written to a buffer first.
        let mut text: Vec<u8> = Vec::new();
        let out = &mut text;
        if a.json {
            json.push(serde_json::json!({
                "id": info.id.to_hex(), "tree": c.tree.to_hex(),
                "parents": c.parents.iter().map(|p| p.to_hex()).collect::<Vec<_>>(),
                "author": format!("{} <{}>", c.author.name, c.author.email), "time": c.author.time,
                "message": c.message,
            }));
        } else if let Some(format) = &a.format {
            // As git: `format:` separates commits with a newline, a bare format or `tformat:` ends each with one.
            // With --graph the graph writes what comes between commits.
            match format.starts_with("format:") || a.graph {
                true if a.graph => write!(
                    out,
                    "{}",
                    format_commit(named_format(format), &info, &*people)
                )?,
                true => write!(
                    out,
                    "{}{}",
                    if shown == 0 { "" } else { "\n" },
                    format_commit(named_format(format), &info, &*people)
                )?,
                false => writeln!(
                    out,
                    "{}",
                    format_commit(named_format(format), &info, &*people)
                )?,
            }
        } else if a.oneline && a.graph {
            // The graph ends the line, after any lines of graph it needs.
            write!(
                out,
                "{}{} {}",
                paint(Style::Id, &info.id.short()),
                names_of(&info.id),
                c.message.lines().next().unwrap_or("")
            )?;
        } else if a.oneline {
            writeln!(
                out,
                "{}{} {}",
                paint(Style::Id, &info.id.short()),
                names_of(&info.id),
                c.message.lines().next().unwrap_or("")
            )?;
        } else {
            // As git's: a blank line between commits, drawn at the end of each in a graph.
            if shown > 0 && !a.graph {
                writeln!(out)?;
            }
            writeln!(
                out,
                "{}{}",
                paint(Style::Id, &format!("commit {}", info.id)),
                names_of(&info.id)
            )?;
            if c.parents.len() > 1 {
                writeln!(
                    out,
                    "Merge: {}",
                    c.parents
                        .iter()
                        .map(|p| p.short())
                        .collect::<Vec<_>>()
                        .join(" ")
                )?;
            }
            let (name, email) = people(&c.author.name, &c.author.email);
            writeln!(out, "Author: {name} <{email}>")?;
            writeln!(out, "Date:   {}\n", dmv_repo::utc_time(c.author.time))?;
            for line in c.message.lines() {
                writeln!(out, "    {line}")?;
            }
        }
        // As git's: a merge's changes are not shown (git's `-m` would), a
        // format's line is followed by a blank line before them, git's
        // default layout by one after them, a one-line commit by none.
        let diffs = a.stat || a.name_status || a.name_only || a.patch;
        // With --graph the changes are drawn beside straight lanes: apart.
        let mut changes_text: Vec<u8> = Vec::new();
        let out = match a.graph {
            true => &mut changes_text,
            false => out,
        };
        if !a.json && diffs && c.parents.len() < 2 {
            let mut changes = repo.history().commit_changes(&info.id)?;
            if !paths.is_empty() && !a.follow {
                changes.retain(|c| paths.iter().any(|s| is_under(&c.path, s)));
            }
            let one_line = a.format.is_none() && a.oneline;
            if !one_line {
                writeln!(out)?;
            }
            match (a.name_status, a.stat, a.name_only) {
                (true, _, _) => print_name_status(out, &repo, &changes)?,
                (_, true, _) => print_stat(out, &repo, &changes, false)?,
                (_, _, true) => print_name_only(out, &changes)?,
                _ => print_patch(out, &repo, &changes, false, a.word_diff)?,
            }
        }
        let mut stdout = std::io::stdout().lock();
        match a.graph && !a.json {
            true => {
                let text = crate::log_graph::CommitText {
                    message: &text,
                    changes: &changes_text,
                    separated,
                };
                parents_shown.clear();
                parents_shown.extend(c.parents.iter().filter(|p| shown_ids.contains(p)));
                graph.draw(&mut stdout, info.id, &parents_shown, &text)?
            }
            false => stdout.write_all(&text)?,
        }
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
    }
    Ok(0)
}

/// `(HEAD -> main, origin/main, tag: v1)`, as git's `--decorate` writes it.
fn decoration_text(names: &[dmv_repo::Decoration]) -> String {
    use dmv_repo::ref_names::{BRANCHES, REMOTE_BRANCHES, TAGS};
    use dmv_repo::Decoration;
    let shown: Vec<String> = names
        .iter()
        .map(|d| match d {
            Decoration::Head { branch: Some(b) } => paint(
                Style::Id,
                &format!("HEAD -> {}", b.strip_prefix(BRANCHES).unwrap_or(b)),
            )
            .into_owned(),
            Decoration::Head { branch: None } => paint(Style::Id, "HEAD").into_owned(),
            Decoration::Branch(b) => b.strip_prefix(BRANCHES).unwrap_or(b).to_string(),
            Decoration::RemoteBranch(b) => b.strip_prefix(REMOTE_BRANCHES).unwrap_or(b).to_string(),
            Decoration::Tag(t) => format!("tag: {}", t.strip_prefix(TAGS).unwrap_or(t)),
        })
        .collect();
    format!("({})", shown.join(", "))
}

/// `--pretty=NAME` as git names its formats, `format:`/`tformat:` taken off a format of placeholders.
fn named_format(format: &str) -> &str {
    match format {
        "oneline" => "%H %s",
        "short" => "commit %H%nAuthor: %aN <%aE>%n%n    %s%n",
        "medium" => "commit %H%nAuthor: %aN <%aE>%nDate:   %ad%n%n    %s%n",
        "full" => "commit %H%nAuthor: %aN <%aE>%nCommit: %cN <%cE>%n%n    %s%n",
        "fuller" => "commit %H%nAuthor:     %aN <%aE>%nAuthorDate: %ad%nCommit:     %cN <%cE>%nCommitDate: %cd%n%n    %s%n",
        other => other.strip_prefix("format:").or_else(|| other.strip_prefix("tformat:")).unwrap_or(other),
    }
}

/// How long ago `then` was, as git says it ("3 hours ago", "2 years, 1 month ago").
fn relative_time(then: i64, now: i64) -> String {
    let secs = now - then;
    if secs < 0 {
        return "in the future".into();
    }
    let plural = |n: i64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    let (minutes, hours, days) = (
        (secs + 30) / 60,
        (secs + 1800) / 3600,
        (secs + 43_200) / 86_400,
    );
    match secs {
        s if s < 90 => format!("{} ago", plural(s, "second")),
        s if s < 90 * 60 => format!("{} ago", plural(minutes, "minute")),
        s if s < 36 * 3600 => format!("{} ago", plural(hours, "hour")),
        s if s < 14 * 86_400 => format!("{} ago", plural(days, "day")),
        s if s < 70 * 86_400 => format!("{} ago", plural((days + 3) / 7, "week")),
        s if s < 365 * 86_400 => format!("{} ago", plural((days + 15) / 30, "month")),
        _ => {
            let (years, months) = (days / 365, (days % 365 + 15) / 30);
            match months {
                0 => format!("{} ago", plural(years, "year")),
                m => format!("{}, {} ago", plural(years, "year"), plural(m, "month")),
            }
        }
    }
}

/// A day as YYYY-MM-DD.
fn short_date(time: i64) -> String {
    dmv_repo::utc_time(time).chars().take(10).collect()
}

/// The name and email a person goes by, for a commit's name and email (the mailmap's answer).
type People<'a> = dyn Fn(&str, &str) -> (String, String) + 'a;

/// The repository's mailmap as a lookup, after a warning when it was too large to read.
fn mailmap_people(repo: &Repository) -> Result<impl Fn(&str, &str) -> (String, String)> {
    let mailmap = repo.history().mailmap()?;
    if let Some(why) = mailmap.refusal() {
        eprintln!("warning: {}", printable(why));
    }
    Ok(move |name: &str, email: &str| {
        let (n, e) = mailmap.map(name, email);
        (n.to_string(), e.to_string())
    })
}

/// A commit as `--format` asks, with git's placeholders (an unknown one is kept as written).
fn format_commit(format: &str, info: &dmv_repo::CommitInfo, people: &People<'_>) -> String {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    };
    let c = &info.commit;
    let (subject, body) = c
        .message
        .split_once('\n')
        .map_or((c.message.as_str(), ""), |(s, b)| {
            (s, b.trim_start_matches('\n'))
        });
    let ids = |short: bool| {
        c.parents
            .iter()
            .map(|p| if short { p.short() } else { p.to_hex() })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = String::new();
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let two = rest.get(..2).unwrap_or("");
        let (text, used) = match two {
            "an" => (c.author.name.clone(), 2),
            "ae" => (c.author.email.clone(), 2),
            "aN" => (people(&c.author.name, &c.author.email).0, 2),
            "aE" => (people(&c.author.name, &c.author.email).1, 2),
            "cN" => (people(&c.committer.name, &c.committer.email).0, 2),
            "cE" => (people(&c.committer.name, &c.committer.email).1, 2),
            "ad" => (dmv_repo::utc_time(c.author.time), 2),
            "at" => (c.author.time.to_string(), 2),
            "cn" => (c.committer.name.clone(), 2),
            "ce" => (c.committer.email.clone(), 2),
            "cd" => (dmv_repo::utc_time(c.committer.time), 2),
            "ct" => (c.committer.time.to_string(), 2),
            "ar" => (relative_time(c.author.time, now()), 2),
            "cr" => (relative_time(c.committer.time, now()), 2),
            "as" => (short_date(c.author.time), 2),
            "cs" => (short_date(c.committer.time), 2),
            _ => match rest.chars().next() {
                Some('H') => (info.id.to_hex(), 1),
                Some('h') => (info.id.short(), 1),
                Some('T') => (c.tree.to_hex(), 1),
                Some('t') => (c.tree.short(), 1),
                Some('P') => (ids(false), 1),
                Some('p') => (ids(true), 1),
                Some('s') => (subject.to_string(), 1),
                Some('b') => (body.to_string(), 1),
                Some('B') => (c.message.clone(), 1),
                Some('n') => ("\n".to_string(), 1),
                Some('%') => ("%".to_string(), 1),
                _ => ("%".to_string(), 0),
            },
        };
        out.push_str(&text);
        rest = &rest[used..];
    }
    out.push_str(rest);
    out
}

#[derive(Args)]
pub struct ShowArgs {
    /// A commit (default HEAD), an annotated tag (its message, then its commit), or REV:PATH to print a file.
    rev: Option<String>,
    /// The files the commit changed and their sizes (by default, git's patch).
    #[arg(long)]
    stat: bool,
    /// A, M or D and the path of each file the commit changed.
    #[arg(long, conflicts_with = "name_only")]
    name_status: bool,
    /// Only the paths the commit changed.
    #[arg(long)]
    name_only: bool,
    /// The commit's header and message only, no changes.
    #[arg(short = 's', long = "no-patch")]
    no_patch: bool,
    /// Text changes word by word, as git's `--word-diff[=MODE]` shows them:
    /// plain (`[-removed-]{+added+}` within each line), color (red and
    /// green), porcelain (for scripts) or none.
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "plain", require_equals = true)]
    word_diff: Option<crate::word_diff::Mode>,
    /// Only these files or folders: `dmv show REV -- PATH…`.
    #[arg(last = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    colour: crate::terminal::ColourArgs,
}

pub fn show(a: ShowArgs) -> Result<u8> {
    let rev = a.rev.unwrap_or_else(|| "HEAD".into());
    if rev.contains(':') {
        return cat(CatArgs { spec: rev });
    }
    let repo = open_repo()?;
    let named = repo.resolve_unpeeled(&rev)?;
    let id = repo.peel(&named)?;
    let c = repo.commit(&id)?;
    crate::diffstat::note_columns();
    let _pager = a.colour.colour_and_pager(&repo);
    crate::word_diff::colour_for(&repo, a.word_diff);
    if named != id {
        // An annotated tag: git's header before the commit.
        let tag = repo.annotated_tag(&named)?;
        println!(
            "{}\nTagger: {} <{}>\nDate:   {}\n",
            paint(Style::Id, &format!("tag {}", tag.name)),
            tag.tagger.name,
            tag.tagger.email,
            dmv_repo::utc_time(tag.tagger.time)
        );
        println!("{}\n", tag.message.trim_end());
    }
    let merge = match c.parents.len() {
        0 | 1 => String::new(),
        _ => format!(
            "\nMerge: {}",
            c.parents
                .iter()
                .map(|p| p.short())
                .collect::<Vec<_>>()
                .join(" ")
        ),
    };
    // As git's log.mailmap: the author as .mailmap names them.
    let (name, email) = mailmap_people(&repo)?(&c.author.name, &c.author.email);
    println!(
        "{}{merge}\nAuthor: {name} <{email}>\nDate:   {}\n",
        paint(Style::Id, &format!("commit {id}")),
        dmv_repo::utc_time(c.author.time)
    );
    for line in c.message.lines() {
        println!("    {line}");
    }
    if a.no_patch {
        return Ok(0);
    }
    println!();
    let mut changes = repo.history().commit_changes(&id)?;
    let specs = repo_paths(&repo, &a.paths)?;
    if !specs.is_empty() {
        changes.retain(|c| specs.iter().any(|s| is_under(&c.path, s)));
    }
    let mut out = std::io::stdout().lock();
    if a.name_status {
        print_name_status(&mut out, &repo, &changes)?;
    } else if a.name_only {
        print_name_only(&mut out, &changes)?;
    } else if a.stat {
        print_stat(&mut out, &repo, &changes, false)?;
    } else {
        print_patch(&mut out, &repo, &changes, false, a.word_diff)?;
    }
    Ok(0)
}

#[derive(Args)]
pub struct DiffArgs {
    /// Zero revisions: staging area vs working tree; one: that commit vs the
    /// working tree (A..B: A vs B; A...B: their merge base vs B); two: commit
    /// vs commit. Then paths, as in git: `dmv diff [REV…] [--] [PATH…]`.
    revs: Vec<String>,
    /// Only these files or folders.
    #[arg(last = true)]
    paths: Vec<PathBuf>,
    /// Compare HEAD with the staging area.
    #[arg(long, alias = "staged")]
    cached: bool,
    /// Per file: bytes before and after.
    #[arg(long)]
    stat: bool,
    /// Per file: A, M or D and the path.
    #[arg(long)]
    name_status: bool,
    /// Only the changed paths.
    #[arg(long)]
    name_only: bool,
    /// Text changes word by word, as git's `--word-diff[=MODE]` shows them:
    /// plain (`[-removed-]{+added+}` within each line), color (red and
    /// green), porcelain (for scripts) or none.
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "plain", require_equals = true)]
    word_diff: Option<crate::word_diff::Mode>,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    colour: crate::terminal::ColourArgs,
}

fn staged_flat(repo: &Repository) -> Result<FlatTree> {
    Ok(repo
        .load_dirstate()?
        .entries
        .iter()
        .map(|(p, e)| {
            (
                p.to_vec(),
                dmv_repo::FlatEntry {
                    kind: e.kind,
                    id: e.id,
                    size: e.size,
                },
            )
        })
        .collect())
}

fn commit_flat(repo: &Repository, rev: &str) -> Result<FlatTree> {
    let id = repo.resolve(rev)?;
    Ok(flatten(&repo.store, &repo.commit(&id)?.tree)?)
}

/// Splits `dmv diff ARGS` as git does without `--`: revisions first, and
/// from the first argument that is not one, paths that must exist here.
fn revisions_then_paths(repo: &Repository, args: &[String]) -> Result<(Vec<String>, Vec<PathBuf>)> {
    let mut revs = Vec::new();
    let mut paths = Vec::new();
    for arg in args {
        let is_rev = paths.is_empty()
            && (repo.resolve(arg).is_ok() || repo.resolve_range(arg).is_ok_and(|r| r.is_some()));
        if is_rev {
            revs.push(arg.clone());
        } else if Path::new(arg).symlink_metadata().is_ok() || tracked_under(repo, arg)? {
            paths.push(PathBuf::from(arg));
        } else {
            bail!("unknown revision or path not in the working tree: {arg} (use `--` to separate paths from revisions)");
        }
    }
    Ok((revs, paths))
}

/// Whether a tracked file is at `arg` or under it (a file deleted from the working tree is still a path to diff).
fn tracked_under(repo: &Repository, arg: &str) -> Result<bool> {
    let Ok(spec) = repo.repo_path(&std::env::current_dir()?, Path::new(arg)) else {
        return Ok(false);
    };
    Ok(repo
        .load_dirstate()?
        .entries
        .iter()
        .any(|(p, _)| is_under(p, &spec)))
}

/// Whether `path` is `spec` or inside the folder `spec` (all of it for an empty spec).
fn is_under(path: &[u8], spec: &[u8]) -> bool {
    let spec = spec.strip_suffix(b"/").unwrap_or(spec);
    spec.is_empty()
        || path == spec
        || (path.starts_with(spec) && path.get(spec.len()) == Some(&b'/'))
}

pub fn diff(mut a: DiffArgs) -> Result<u8> {
    let repo = open_repo()?;
    crate::diffstat::note_columns();
    let _pager = (!a.json)
        .then(|| a.colour.colour_and_pager(&repo))
        .flatten();
    crate::word_diff::colour_for(&repo, a.word_diff);
    let (revs, paths) = revisions_then_paths(&repo, &a.revs)?;
    a.revs = revs;
    a.paths.extend(paths);
    let specs = repo_paths(&repo, &a.paths)?;
    let mut changes = match (a.revs.as_slice(), a.cached) {
        // The staging area against the working tree is what status finds
        // unstaged: no flat list of every tracked file, twice.
        ([], false) => {
            let mut unstaged = repo.status()?.unstaged;
            unstaged.sort_by(|x, y| x.path.cmp(&y.path));
            unstaged
        }
        ([], true) => diff_flat(&commit_flat_or_empty(&repo)?, &staged_flat(&repo)?),
        ([r], false) if r.contains("..") => {
            // `A..B` compares A with B; `A...B` the merge base of A and B with B.
            let range = repo
                .resolve_range(r)?
                .ok_or_else(|| anyhow!("not a range: {r}"))?;
            let old = match range.symmetric {
                true => *range
                    .haves
                    .first()
                    .ok_or_else(|| anyhow!("{r}: the two sides have no commit in common"))?,
                false => range.haves[0],
            };
            let new = *range
                .wants
                .last()
                .ok_or_else(|| anyhow!("not a range: {r}"))?;
            diff_flat(
                &flatten(&repo.store, &repo.commit(&old)?.tree)?,
                &flatten(&repo.store, &repo.commit(&new)?.tree)?,
            )
        }
        ([r], true) => diff_flat(&commit_flat(&repo, r)?, &staged_flat(&repo)?),
        ([r], false) => diff_flat(&commit_flat(&repo, r)?, &repo.worktree().worktree_flat()?),
        ([r1, r2], false) => diff_flat(&commit_flat(&repo, r1)?, &commit_flat(&repo, r2)?),
        _ => bail!("usage: dmv diff [--cached] [REV [REV]]"),
    };
    if !specs.is_empty() {
        changes.retain(|c| specs.iter().any(|s| is_under(&c.path, s)));
    }
    // The new side is the working tree's files unless two commits, a range or the staging area are compared.
    let new_in_worktree = !a.cached && a.revs.len() < 2 && !a.revs.iter().any(|r| r.contains(".."));
    if a.json {
        println!("{}", serde_json::to_string_pretty(&changes)?);
    } else if a.name_status {
        print_name_status(&mut std::io::stdout().lock(), &repo, &changes)?;
    } else if a.name_only {
        for c in &changes {
            println!("{}", show_path(&c.path));
        }
    } else if a.stat {
        print_stat(
            &mut std::io::stdout().lock(),
            &repo,
            &changes,
            new_in_worktree,
        )?;
    } else {
        print_patch(
            &mut std::io::stdout().lock(),
            &repo,
            &changes,
            new_in_worktree,
            a.word_diff,
        )?;
    }
    Ok(0)
}

/// What `commit` changed from its first parent: per file as `diff --stat`
/// says it, or with `patch` as `diff` does (`stash show`).
pub(crate) fn show_commit_changes(
    repo: &Repository,
    commit: &dmv_repo::store::ObjectId,
    patch: bool,
) -> Result<()> {
    let c = repo.commit(commit)?;
    let old = match c.parents.first() {
        Some(p) => flatten(&repo.store, &repo.commit(p)?.tree)?,
        None => FlatTree::new(),
    };
    let changes = diff_flat(&old, &flatten(&repo.store, &c.tree)?);
    let mut out = std::io::stdout().lock();
    match patch {
        true => print_patch(&mut out, repo, &changes, false, None),
        false => print_stat(&mut out, repo, &changes, false),
    }
}

fn commit_flat_or_empty(repo: &Repository) -> Result<FlatTree> {
    Ok(match repo.head_tree()? {
        Some(t) => flatten(&repo.store, &t)?,
        None => FlatTree::new(),
    })
}

/// In a partial replica, the versions these changes would show as text
/// are fetched first, in one batch (as a blobless git clone fetches a
/// diff's blobs), so a diff reads as in a full replica; what cannot be
/// fetched is shown by its size, after a warning.
fn fetch_for_diff(repo: &Repository, changes: &[Change], new_in_worktree: bool) {
    if !repo.is_partial() {
        return;
    }
    let versions = match repo
        .history()
        .versions_a_diff_reads(changes, new_in_worktree)
    {
        Ok(v) if !v.is_empty() => v,
        _ => return,
    };
    if let Err(e) = dmv_sync::fetch_versions(repo, versions, &dmv_repo::Silent) {
        eprintln!("warning: files whose data is not here could not be fetched ({}): they are shown by size", printable(&e.to_string()));
    }
}

/// git's default diff: a unified diff of each text file, and for media and
/// other binary files one line with what a person knows them by and the
/// sizes before and after.
fn print_patch(
    out: &mut impl Write,
    repo: &Repository,
    changes: &[Change],
    new_in_worktree: bool,
    words: Option<crate::word_diff::Mode>,
) -> Result<()> {
    fetch_for_diff(repo, changes, new_in_worktree);
    for c in changes {
        let path = show_path(&c.path);
        writeln!(
            out,
            "{}",
            paint(Style::Meta, &format!("diff --dmv a/{path} b/{path}"))
        )?;
        match (c.old, c.new) {
            (None, Some(_)) => writeln!(out, "{}", paint(Style::Meta, "new file"))?,
            (Some(_), None) => writeln!(out, "{}", paint(Style::Meta, "deleted file"))?,
            _ => {}
        }
        let old = repo.history().diff_side(c.old.as_ref(), None)?;
        let new = repo
            .history()
            .diff_side(c.new.as_ref(), new_in_worktree.then_some(c.path.as_slice()))?;
        match (old, new) {
            (DiffSide::Text(old), DiffSide::Text(new)) => {
                let (from, to) = (
                    if c.old.is_some() {
                        format!("a/{path}")
                    } else {
                        "/dev/null".into()
                    },
                    if c.new.is_some() {
                        format!("b/{path}")
                    } else {
                        "/dev/null".into()
                    },
                );
                if let Some(mode) = words.filter(|m| *m != crate::word_diff::Mode::Lines) {
                    let paint = crate::terminal::painting();
                    write!(
                        out,
                        "{}",
                        crate::word_diff::word_diff(&old, &new, &from, &to, mode, paint)
                    )?;
                    continue;
                }
                let unified = similar::TextDiff::from_lines(&old, &new)
                    .unified_diff()
                    .context_radius(3)
                    .header(&from, &to)
                    .to_string();
                // git's function line after each hunk's header.
                let unified: String = unified
                    .split_inclusive('\n')
                    .map(|line| match line.strip_suffix('\n') {
                        Some(header) if header.starts_with("@@ -") => {
                            crate::word_diff::with_function_line(header, &old) + "\n"
                        }
                        _ => line.to_string(),
                    })
                    .collect();
                write!(out, "{}", paint_unified(&unified))?;
            }
            (old, new) => writeln!(
                out,
                "Binary files differ ({} -> {})",
                describe(c.old.as_ref(), old),
                describe(c.new.as_ref(), new)
            )?,
        }
    }
    Ok(())
}

/// A side of a binary change: its facts and size, or "none" where the file is not.
fn describe(entry: Option<&dmv_repo::FlatEntry>, side: DiffSide) -> String {
    let Some(e) = entry else { return "none".into() };
    let mut facts = match side {
        DiffSide::Binary { facts } => facts,
        DiffSide::Text(_) => Vec::new(),
    };
    facts.push(human_bytes(e.size));
    facts.join(", ")
}

/// A, M, D or R with the share of the content kept (git's R100, R087), and the paths.
/// Each changed path on a line (`--name-only`).
fn print_name_only(out: &mut impl Write, changes: &[Change]) -> Result<()> {
    for c in changes {
        writeln!(out, "{}", show_path(&c.path))?;
    }
    Ok(())
}

fn print_name_status(out: &mut impl Write, repo: &Repository, changes: &[Change]) -> Result<()> {
    for listed in dmv_repo::find_renames(&repo.store, changes.to_vec())? {
        match listed {
            dmv_repo::Listed::Change(c) => {
                writeln!(out, "{}\t{}", c.kind.letter(), show_path(&c.path))?
            }
            dmv_repo::Listed::Renamed {
                from,
                to,
                similarity,
                ..
            } => writeln!(
                out,
                "R{similarity:03}\t{}\t{}",
                show_path(&from),
                show_path(&to)
            )?,
        }
    }
    Ok(())
}

pub(crate) fn print_stat(
    out: &mut impl Write,
    repo: &Repository,
    changes: &[Change],
    new_in_worktree: bool,
) -> Result<()> {
    fetch_for_diff(repo, changes, new_in_worktree);
    crate::diffstat::write_stat(out, repo, changes, new_in_worktree)
}

#[derive(Args)]
pub struct CatArgs {
    /// REV:PATH (`:PATH`: the staged version)
    spec: String,
}

pub fn cat(a: CatArgs) -> Result<u8> {
    let repo = open_repo()?;
    let (rev, path) = a
        .spec
        .split_once(':')
        .ok_or_else(|| anyhow!("expected REV:PATH, got '{}'", a.spec))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    dmv_sync::write_file_at(&repo, rev, path, &mut out, &dmv_sync::Silent)?;
    out.flush()?;
    Ok(0)
}

#[derive(Args)]
pub struct LsFilesArgs {
    /// Only these files or folders.
    paths: Vec<PathBuf>,
    /// The files in the staging area (the default).
    #[arg(short = 'c', long)]
    cached: bool,
    /// Untracked files, not ignored ones.
    #[arg(short = 'o', long)]
    others: bool,
    /// Tracked files changed or deleted in the working tree.
    #[arg(short = 'm', long)]
    modified: bool,
    /// Tracked files deleted from the working tree.
    #[arg(short = 'd', long)]
    deleted: bool,
    /// End each path with a NUL byte, written as it is (no quoting).
    #[arg(short = 'z')]
    nul: bool,
}

/// `git ls-files`: paths from the top folder, in git's order (by bytes),
/// quoted as status quotes them unless `-z`.
pub fn ls_files(a: LsFilesArgs) -> Result<u8> {
    let repo = crate::repo_args::open_worktree()?;
    let specs = repo_paths(&repo, &a.paths)?;
    let wanted = |p: &[u8]| specs.is_empty() || specs.iter().any(|s| is_under(p, s));
    let mut listed: Vec<Vec<u8>> = Vec::new();
    let changes = a.modified || a.deleted || a.others;
    if a.cached || !changes {
        listed.extend(repo.load_dirstate()?.entries.keys().map(<[u8]>::to_vec));
    }
    if changes {
        let st = repo.status_listing()?;
        if a.others {
            listed.extend(st.untracked.iter().cloned());
        }
        for e in &st.unstaged {
            let deleted = e.kind == ChangeKind::Deleted;
            if (a.modified && e.kind != ChangeKind::Added) || (a.deleted && deleted) {
                listed.push(e.path.clone());
            }
        }
    }
    listed.retain(|p| wanted(p));
    listed.sort();
    listed.dedup();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for p in &listed {
        match a.nul {
            true => {
                out.write_all(p)?;
                out.write_all(b"\0")?;
            }
            false => writeln!(out, "{}", show_path(p))?,
        }
    }
    out.flush()?;
    Ok(0)
}

#[derive(Args)]
pub struct LsTreeArgs {
    /// REV or REV:PATH (default HEAD).
    spec: Option<String>,
    /// Recurse into subdirectories.
    #[arg(short, long)]
    recursive: bool,
}

pub fn ls_tree(a: LsTreeArgs) -> Result<u8> {
    let repo = open_repo()?;
    let spec = a.spec.unwrap_or_else(|| "HEAD".into());
    let (rev, path) = spec.split_once(':').unwrap_or((&spec, ""));
    let (_, entry) = repo.history().entry_at(rev, path)?;
    if entry.kind != EntryKind::Dir {
        bail!("'{path}' is not a directory");
    }
    let kind_name = |k: EntryKind| match k {
        EntryKind::File => "file",
        EntryKind::Executable => "exec",
        EntryKind::Symlink => "link",
        EntryKind::Dir => "tree",
    };
    let mut out = std::io::stdout().lock();
    if a.recursive {
        for (p, e) in flatten(&repo.store, &entry.id)? {
            writeln!(
                out,
                "{} {} {:>12}\t{}",
                kind_name(e.kind),
                e.id,
                e.size,
                show_path(&p)
            )?;
        }
    } else {
        for e in read_dir(&repo.store, &entry.id)? {
            writeln!(
                out,
                "{} {} {:>12}\t{}",
                kind_name(e.kind),
                e.id,
                e.size,
                show_path(&e.name)
            )?;
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct ArchiveArgs {
    /// The archive's format: tar, or zip (stored, streamed; Zip64 for files of 4 GiB and more).
    /// Without it, the output file's extension decides (.zip), else tar.
    #[arg(long)]
    format: Option<String>,
    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// Put this before every path in the archive (`--prefix=shoot-2026/`).
    #[arg(long, default_value = "")]
    prefix: String,
    /// The commit (or branch, tag) whose files go in.
    rev: String,
    /// Only the files at or under these paths.
    paths: Vec<std::path::PathBuf>,
}

pub fn archive(a: ArchiveArgs) -> Result<u8> {
    let by_name = a
        .output
        .as_ref()
        .and_then(|o| o.extension())
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"));
    let format = match a.format.as_deref() {
        Some("tar") => dmv_repo::ArchiveFormat::Tar,
        Some("zip") => dmv_repo::ArchiveFormat::Zip,
        Some(other) => bail!(
            "format '{other}' is not supported: dmv archive writes tar or zip (--format=tar|zip)"
        ),
        None if by_name => dmv_repo::ArchiveFormat::Zip,
        None => dmv_repo::ArchiveFormat::Tar,
    };
    let repo = open_repo()?;
    let commit = repo.resolve(&a.rev)?;
    let specs = repo_paths(&repo, &a.paths)?;
    // A partial replica fetches the data it lacks first, as `cat` does.
    dmv_sync::fetch_versions(
        &repo,
        repo.history().files_to_archive(&commit, &specs)?,
        &crate::progress::Phases::default(),
    )?;
    match &a.output {
        Some(path) => {
            // Written beside and renamed into place: a refusal or a kill leaves no partial archive.
            let mut refused = None;
            let written = dmv_repo::write_atomic_with(path, &mut |out| {
                repo.history()
                    .archive(&commit, &specs, &a.prefix, format, out)
                    .map(|_| ())
                    .map_err(|e| {
                        let io = std::io::Error::other(e.to_string());
                        refused = Some(e);
                        io
                    })
            });
            if let Some(e) = refused {
                return Err(e.into());
            }
            written?;
        }
        None => {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
            repo.history()
                .archive(&commit, &specs, &a.prefix, format, &mut out)?;
            out.flush()?;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::relative_time;

    #[test]
    fn relative_times_read_as_gits() {
        let now = 1_800_000_000;
        for (ago, said) in [
            (5, "5 seconds ago"),
            (89, "89 seconds ago"),
            (120, "2 minutes ago"),
            (3 * 3600, "3 hours ago"),
            (86_400 * 2, "2 days ago"),
            (86_400 * 21, "3 weeks ago"),
            (86_400 * 100, "3 months ago"),
            (86_400 * 365, "1 year ago"),
            (86_400 * (730 + 45), "2 years, 2 months ago"),
        ] {
            assert_eq!(relative_time(now - ago, now), said, "{ago} s");
        }
    }
}
