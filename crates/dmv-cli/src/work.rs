//! Commands that change the working tree, the staging area or refs.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use dmv_repo::store::ChunkParams;
use dmv_repo::{ChangeKind, CommitRequest, Committed, Head, NothingToCommit, Repository};

use crate::progress::{Bar, Quiet};
use crate::repo_args::{open_repo, open_worktree, printable, repo_paths, show_path};
use crate::terminal::{paint, Style};
use dmv_repo::ref_names::{branch_ref, tag_ref, BRANCHES, REMOTE_BRANCHES, TAGS};

#[derive(Args)]
pub struct InitArgs {
    /// Where to create the repository (default: the current directory).
    path: Option<PathBuf>,
    /// Minimum chunk size in bytes (fixed for the repository's lifetime).
    #[arg(long, default_value_t = ChunkParams::default().min)]
    chunk_min: u32,
    /// Average chunk size in bytes.
    #[arg(long, default_value_t = ChunkParams::default().avg)]
    chunk_avg: u32,
    /// Maximum chunk size in bytes.
    #[arg(long, default_value_t = ChunkParams::default().max)]
    chunk_max: u32,
    /// No working tree: a repository for others to push to.
    #[arg(long)]
    bare: bool,
    /// The first branch's name (default: the global init.defaultBranch, else main).
    #[arg(short = 'b', long = "initial-branch", value_name = "NAME")]
    initial_branch: Option<String>,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn init(a: InitArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let path = a.path.unwrap_or_else(|| PathBuf::from("."));
    let params = ChunkParams {
        min: a.chunk_min,
        avg: a.chunk_avg,
        max: a.chunk_max,
    };
    let first = match a.initial_branch {
        Some(name) => Some(name),
        None => dmv_repo::GlobalSettings::load()?.get("init.defaultBranch"),
    };
    let repo = Repository::init_set_up(&path, params, a.bare, |dmv, _| match &first {
        Some(name) => {
            let full = branch_ref(name);
            dmv_repo::validate_ref_name(&full)?;
            Head::Branch(full).save(&dmv.join("HEAD"))
        }
        None => Ok(()),
    })?;
    if !quiet {
        println!("Initialized empty dmv repository in {}", repo.dmv.display());
    }
    Ok(0)
}

#[derive(Args)]
pub struct StatusArgs {
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// One line per path: XY PATH (X staged, Y unstaged, ?? untracked).
    #[arg(short, long)]
    short: bool,
    /// As --short, for scripts: never coloured, the same in every version
    /// (git's porcelain format v1).
    #[arg(long, value_name = "VERSION", num_args = 0..=1, default_missing_value = "v1", require_equals = true)]
    porcelain: Option<String>,
    /// With --short or --porcelain, a first line `## BRANCH...UPSTREAM [ahead N, behind M]`.
    #[arg(short, long)]
    branch: bool,
}

pub fn status(a: StatusArgs) -> Result<u8> {
    let repo = open_worktree()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&repo.status()?)?);
        return Ok(0);
    }
    match a.porcelain.as_deref() {
        None => crate::terminal::decide_colour(&repo, None),
        Some("v1" | "1") => {
            crate::terminal::decide_colour(&repo, Some(crate::terminal::When::Never))
        }
        Some(other) => {
            bail!("status --porcelain={other}: only v1 is written (git's first porcelain format)")
        }
    }
    if a.short || a.porcelain.is_some() {
        let st = repo.status_listing()?;
        if a.branch {
            println!("{}", branch_header(&repo, &st)?);
        }
        return status_short(&repo, st);
    }
    let word = |k: ChangeKind| match k {
        ChangeKind::Added => "new file:",
        ChangeKind::Deleted => "deleted:",
        ChangeKind::Modified => "modified:",
    };
    // The staged changes are listed as they are read (see `StatusListing`); a million lines are written in large pieces.
    let st = repo.status_listing()?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // As last learned from the remote (lock, locks, push, commit): no network here.
    let known = repo.locks().known_locks();
    let mut held: Vec<&dmv_repo::PathLock> = Vec::new();
    let conflicts = st
        .merge
        .as_ref()
        .map(|m| m.conflicts.as_slice())
        .unwrap_or_default();
    match &st.branch {
        Some(b) => {
            let short = b.strip_prefix(BRANCHES).unwrap_or(b);
            writeln!(out, "On branch {short}")?;
            // Local refs only: no network here.
            if let Some(t) = repo.history().tracking()? {
                writeln!(out, "{}", tracking_words(&t))?;
            }
            for offer in repo.pending_offers(short)? {
                let label = offer.label;
                writeln!(out, "{label} was offered by a peer and is not merged yet.\n  (use \"dmv sync\" to merge it)")?;
            }
        }
        None => writeln!(out, "HEAD detached")?,
    }
    // As git's note of a sparse checkout: an empty-looking folder is not a lost one.
    let (absent, tracked) = st.absent_of_tracked();
    if absent > 0 {
        writeln!(
            out,
            "{absent} of {tracked} tracked files are not here (this replica's slice: {}).",
            repo.config.slice
        )?;
        writeln!(
            out,
            "  (use \"dmv get PATH...\" to fetch them, \"dmv ls --absent\" to list them)"
        )?;
    }
    if let Some(r) = repo.merges().rebase_state()? {
        let branch = r
            .branch
            .as_deref()
            .map(|b| format!(" branch '{}'", b.strip_prefix(BRANCHES).unwrap_or(b)))
            .unwrap_or_default();
        writeln!(
            out,
            "You are currently rebasing{branch} onto {} ({} left to pick).",
            r.onto.short(),
            r.todo.len()
        )?;
        writeln!(out, "  (settle conflicts and run \"dmv rebase --continue\")\n  (use \"dmv rebase --skip\" to leave this commit out)\n  (use \"dmv rebase --abort\" to check out the original branch)")?;
    }
    if let Some(m) = &st.merge {
        let (doing, what, command) = match m.cherry_pick {
            true => ("cherry-picking commit", "cherry-pick", "cherry-pick"),
            false => ("merging", "merge", "merge"),
        };
        writeln!(out, "You are {doing} {} ({}).", m.label, m.theirs.short())?;
        if m.interrupted {
            writeln!(out, "The {what} was interrupted before the working tree was written.\n  (use \"dmv {command} --abort\" to start over)")?;
        } else if conflicts.is_empty() {
            writeln!(out, "All conflicts fixed but you are still {doing}.\n  (use \"dmv commit\" to conclude the {what})")?;
        } else {
            writeln!(out, "  (fix conflicts and run \"dmv add PATH...\", or settle them with \"dmv resolve --ours|--theirs|--both PATH...\"; then run \"dmv commit\")")?;
            writeln!(out, "  (use \"dmv {command} --abort\" to abort the {what})")?;
            writeln!(out, "\nUnmerged paths:")?;
            for u in conflicts {
                writeln!(
                    out,
                    "\t{}",
                    paint(
                        Style::Unstaged,
                        &format!(
                            "{:<17}{}",
                            format!("{}:", u.description),
                            show_path(&u.path)
                        )
                    )
                )?;
            }
        }
    }
    let mut staged = 0;
    let mut failed = None;
    repo.list_staged(&st, &mut |listed| {
        let line = match &listed {
            // A conflicted path is listed once, as unmerged, not also as staged.
            dmv_repo::Listed::Change(c) if conflicts.iter().any(|u| u.path == c.path) => {
                return Ok(())
            }
            dmv_repo::Listed::Change(c) => {
                held.extend(known.other_holder(&show_path(&c.path)));
                format!(
                    "\t{}",
                    paint(
                        Style::Staged,
                        &format!("{:<12}{}", word(c.kind), show_path(&c.path))
                    )
                )
            }
            dmv_repo::Listed::Renamed { from, to, .. } => {
                held.extend(
                    known
                        .other_holder(&show_path(from))
                        .into_iter()
                        .chain(known.other_holder(&show_path(to))),
                );
                format!(
                    "\t{}",
                    paint(
                        Style::Staged,
                        &format!("{:<12}{} -> {}", "renamed:", show_path(from), show_path(to))
                    )
                )
            }
        };
        let heading = if staged == 0 {
            "\nChanges to be committed:\n"
        } else {
            ""
        };
        staged += 1;
        // Written here, so the library's error type carries only its own errors.
        writeln!(out, "{heading}{line}")
            .map_err(|e| failed = Some(e))
            .ok();
        Ok(())
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if !st.unstaged.is_empty() {
        writeln!(out, "\nChanges not staged for commit:")?;
        for c in &st.unstaged {
            held.extend(known.other_holder(&show_path(&c.path)));
            writeln!(
                out,
                "\t{}",
                paint(
                    Style::Unstaged,
                    &format!("{:<12}{}", word(c.kind), show_path(&c.path))
                )
            )?;
        }
    }
    held.sort_by(|a, b| a.path.cmp(&b.path));
    held.dedup_by(|a, b| a.path == b.path);
    if !held.is_empty() {
        writeln!(
            out,
            "\nChanged files locked by someone else (as {} said at {}):",
            known.remote,
            dmv_repo::utc_time(known.learned as i64)
        )?;
        for l in held {
            writeln!(out, "\t{}\tlocked by {}", l.path, l.holder())?;
        }
    }
    let kept_both = repo.merges().kept_both();
    if !kept_both.is_empty() {
        writeln!(out, "\nChanged on two replicas, both versions kept:\n  (delete the one you do not want, or merge them by hand)")?;
        for k in &kept_both {
            writeln!(
                out,
                "\t{}: {}",
                printable(&k.path),
                k.kept
                    .iter()
                    .map(|p| printable(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
    }
    if !st.untracked.is_empty() {
        writeln!(out, "\nUntracked files:")?;
        for p in &st.untracked {
            writeln!(out, "\t{}", paint(Style::Unstaged, &show_path(p)))?;
        }
    }
    if staged == 0 && st.unstaged.is_empty() && st.untracked.is_empty() && st.merge.is_none() {
        writeln!(out, "nothing to commit, working tree clean")?;
    }
    out.flush()?;
    Ok(0)
}

/// `status --short`, as git's: one line per path in path order, its staged
/// and unstaged letters side by side (`MM`), untracked files after. The
/// staged changes come in path order as they are read, and the unstaged
/// changes and conflicts (lists in path order) are merged in as they pass.
fn status_short(repo: &Repository, st: dmv_repo::StatusListing) -> Result<u8> {
    let conflicts = st
        .merge
        .as_ref()
        .map(|m| m.conflicts.as_slice())
        .unwrap_or_default();
    let mut conflicted: Vec<_> = conflicts.iter().collect();
    conflicted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut lines = ShortLines {
        out: std::io::BufWriter::new(std::io::stdout().lock()),
        unstaged: st.unstaged.iter().peekable(),
        conflicted: conflicted.into_iter().peekable(),
    };
    let mut failed = None;
    repo.list_staged(&st, &mut |listed| {
        // Written here, so the library's error type carries only its own errors.
        lines.staged(listed).map_err(|e| failed = Some(e)).ok();
        Ok(())
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    lines.before(None)?;
    for p in &st.untracked {
        writeln!(
            lines.out,
            "{} {}",
            paint(Style::Unstaged, "??"),
            show_path(p)
        )?;
    }
    lines.out.flush()?;
    Ok(0)
}

/// The lines of `status --short` so far: what is left of the unstaged changes and conflicts.
struct ShortLines<'s, W: Write> {
    out: W,
    unstaged: std::iter::Peekable<std::slice::Iter<'s, dmv_repo::StatusEntry>>,
    conflicted: std::iter::Peekable<std::vec::IntoIter<&'s dmv_repo::ConflictStatus>>,
}

impl<W: Write> ShortLines<'_, W> {
    /// The line of a staged change, after those of the paths before it.
    fn staged(&mut self, listed: dmv_repo::Listed) -> std::io::Result<()> {
        self.before(Some(listed.path()))?;
        // A conflicted path is listed once, as unmerged, not also as staged.
        if self
            .conflicted
            .peek()
            .is_some_and(|u| u.path == listed.path())
        {
            return Ok(());
        }
        let y = self
            .unstaged
            .next_if(|c| c.path == listed.path())
            .map_or(' ', |c| c.kind.letter());
        let y = paint(Style::Unstaged, &y.to_string()).into_owned();
        match listed {
            dmv_repo::Listed::Renamed { from, to, .. } => writeln!(
                self.out,
                "{}{y} {} -> {}",
                paint(Style::Staged, "R"),
                show_path(&from),
                show_path(&to)
            ),
            dmv_repo::Listed::Change(c) => writeln!(
                self.out,
                "{}{y} {}",
                paint(Style::Staged, &c.kind.letter().to_string()),
                show_path(&c.path)
            ),
        }
    }

    /// The lines of the unstaged changes and conflicts whose paths sort before `end` (all of them: None).
    fn before(&mut self, end: Option<&[u8]>) -> std::io::Result<()> {
        loop {
            let next = [
                self.unstaged.peek().map(|c| c.path.as_slice()),
                self.conflicted.peek().map(|u| u.path.as_slice()),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(path) = next
                .filter(|p| end.is_none_or(|end| *p < end))
                .map(<[u8]>::to_vec)
            else {
                return Ok(());
            };
            let y = self
                .unstaged
                .next_if(|c| c.path == path)
                .map_or(' ', |c| c.kind.letter());
            match self.conflicted.next_if(|u| u.path == path) {
                Some(u) => writeln!(self.out, "{} {}", u.code, show_path(&path))?,
                None => writeln!(
                    self.out,
                    " {} {}",
                    paint(Style::Unstaged, &y.to_string()),
                    show_path(&path)
                )?,
            }
        }
    }
}

#[derive(Args)]
pub struct AddArgs {
    /// Files or directories to stage (`.` for everything).
    #[arg(required_unless_present_any = ["update", "all", "patch"])]
    paths: Vec<PathBuf>,
    /// Choose hunk by hunk what of each changed text file to stage, as
    /// git's `add -p` asks (y, n, q, a, d, s, j, J, k, K, ?).
    #[arg(short, long, conflicts_with_all = ["update", "all", "force"])]
    patch: bool,
    /// Add files named here even if an ignore rule leaves them out.
    #[arg(short, long)]
    force: bool,
    /// Stage the changes and deletions of tracked files only, no new file
    /// (all of them, or those under PATHS).
    #[arg(short, long, conflicts_with = "all")]
    update: bool,
    /// Stage every new, changed and deleted file of the whole working tree
    /// (or under PATHS), wherever you are in it.
    #[arg(short = 'A', long)]
    all: bool,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn add(a: AddArgs) -> Result<u8> {
    a.quiet.apply();
    let repo = open_worktree()?;
    if a.patch {
        return crate::add_patch::add_patch(&repo, &repo_paths(&repo, &a.paths)?);
    }
    // As git's `add -u` and `add -A` without paths: the whole tree, not the current folder.
    let specs = match a.paths.is_empty() {
        true => vec![Vec::new()],
        false => repo_paths(&repo, &a.paths)?,
    };
    if !a.force {
        let ignored = repo.worktree().ignored_paths(&specs)?;
        if !ignored.is_empty() {
            let names: Vec<String> = ignored.iter().map(|p| show_path(p)).collect();
            bail!(
                "an ignore rule (.gitignore or .dmvignore) leaves out {}: `dmv add -f` adds it anyway",
                names.join(", ")
            );
        }
    }
    let p = Bar::new("adding");
    repo.add_settling(&specs, a.update, &p)?;
    Ok(0)
}

#[derive(Args)]
pub struct RmArgs {
    /// Only unstage; keep the files in the working tree.
    #[arg(long)]
    cached: bool,
    /// Accepted as git takes it: a folder named is always removed whole.
    #[arg(short = 'r')]
    recursive: bool,
    #[command(flatten)]
    quiet: Quiet,
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn rm(a: RmArgs) -> Result<u8> {
    // git refuses a folder without -r; DMV removes a folder named either way.
    let _ = a.recursive;
    let repo = open_worktree()?;
    let specs = repo_paths(&repo, &a.paths)?;
    let quiet = a.quiet.apply();
    for p in repo.rm_settling(&specs, a.cached)? {
        if !quiet {
            println!("rm '{}'", show_path(&p));
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct MvArgs {
    source: PathBuf,
    destination: PathBuf,
}

pub fn mv(a: MvArgs) -> Result<u8> {
    let repo = open_worktree()?;
    // `mv x photos/` means into the folder photos, which must exist, as git says.
    if a.destination.as_os_str().as_encoded_bytes().ends_with(b"/") && !a.destination.is_dir() {
        bail!(
            "destination folder {} does not exist",
            a.destination.display()
        );
    }
    let specs = repo_paths(&repo, &[a.source, a.destination])?;
    repo.worktree().mv(&specs[0], &specs[1])?;
    Ok(0)
}

#[derive(Args)]
pub struct CommitArgs {
    /// The commit message (without it, the editor opens; a merge is concluded as "Merge LABEL", a cherry-pick with the picked commit's message).
    #[arg(short, long)]
    message: Vec<String>,
    /// Stage every modified or deleted tracked file first.
    #[arg(short, long)]
    all: bool,
    #[command(flatten)]
    quiet: Quiet,
    /// Replace the last commit (same parents and author) with one of what is
    /// staged now; its message is kept unless -m gives another.
    #[arg(long)]
    amend: bool,
    /// Take the message there is (the amended commit's, a merge's or a
    /// cherry-pick's) without opening the editor.
    #[arg(long)]
    no_edit: bool,
    /// Make the commit even when nothing changed (a marker in the history).
    #[arg(long)]
    allow_empty: bool,
    /// Commit only PATHS as the working tree has them (the default with
    /// PATHS, as git's): whatever else is staged stays staged.
    #[arg(short = 'o', long, conflicts_with = "include")]
    only: bool,
    /// Stage the tracked files at PATHS, then commit everything staged.
    #[arg(short = 'i', long)]
    include: bool,
    /// Tracked files or folders to commit as they are in the working tree.
    paths: Vec<PathBuf>,
}

/// Whether a commit would record anything: something staged, or with `-a` a tracked file changed.
fn has_something_to_commit(repo: &Repository, all: bool) -> Result<bool> {
    let status = repo.status()?;
    Ok(!status.staged.is_empty() || (all && !status.unstaged.is_empty()))
}

/// The editor for a commit message, as git looks for one: DMV_EDITOR (or
/// GIT_EDITOR), core.editor, VISUAL, EDITOR, else vi when a person is at
/// the terminal.
/// None: no message can be asked for (a script without -m).
pub(crate) fn editor() -> Option<String> {
    use std::io::IsTerminal;
    let var = |v: &str| std::env::var(v).ok().filter(|e| !e.trim().is_empty());
    // As git: its own variable, then core.editor, then the system's.
    let setting = || {
        open_repo()
            .ok()
            .and_then(|r| r.setting("core.editor").ok().flatten())
            .or_else(|| dmv_repo::GlobalSettings::load().ok()?.get("core.editor"))
            .filter(|e| !e.trim().is_empty())
    };
    var("DMV_EDITOR")
        .or_else(|| var("GIT_EDITOR"))
        .or_else(setting)
        .or_else(|| var("VISUAL"))
        .or_else(|| var("EDITOR"))
        .or_else(|| std::io::stdin().is_terminal().then(|| "vi".to_string()))
}

/// Opens `editor` on `.dmv/COMMIT_EDITMSG` with what is being committed in
/// comment lines; the message without them, or None when it is empty.
fn edit_message(repo: &Repository, editor: &str) -> Result<Option<String>> {
    let path = repo.dmv.join("COMMIT_EDITMSG");
    let mut template =
        String::from("\n# Please enter the commit message for your changes. Lines starting\n# with '#' will be ignored, and an empty message aborts the commit.\n#\n");
    template.push_str(&format!(
        "# On branch {}\n# Changes to be committed:\n",
        branch_label(repo)?
    ));
    for c in repo.status()?.staged {
        let word = match c.kind {
            ChangeKind::Added => "new file",
            ChangeKind::Modified => "modified",
            ChangeKind::Deleted => "deleted",
        };
        template.push_str(&format!("#\t{word}:   {}\n", show_path(&c.path)));
    }
    edit_text(editor, &path, &template)
}

/// Opens `editor` on `path` holding `text`; what the person left, without
/// comment lines ('#'), or None when that is empty.
pub(crate) fn edit_text(
    editor: &str,
    path: &std::path::Path,
    text: &str,
) -> Result<Option<String>> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    // As git runs it: through the shell, so EDITOR may carry arguments ("code --wait").
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(editor)
        .arg(path)
        .status()
        .with_context(|| format!("cannot run the editor {editor}"))?;
    if !status.success() {
        bail!("the editor {editor} failed ({status}); nothing was changed");
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::trim_end)
        .collect();
    let message = kept.join("\n").trim().to_string();
    Ok((!message.is_empty()).then_some(message))
}

/// The line after a commit's, as git's " 3 files changed": how many, and of which kind.
fn changed_summary(changes: &[dmv_repo::Change]) -> String {
    let count = |k: ChangeKind| changes.iter().filter(|c| c.kind == k).count();
    let files = if changes.len() == 1 {
        "1 file changed".to_string()
    } else {
        format!("{} files changed", changes.len())
    };
    let kinds: Vec<String> = [
        (count(ChangeKind::Added), "added"),
        (count(ChangeKind::Modified), "modified"),
        (count(ChangeKind::Deleted), "deleted"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, word)| format!("{n} {word}"))
    .collect();
    match kinds.as_slice() {
        [] => format!(" {files}"),
        _ => format!(" {files} ({})", kinds.join(", ")),
    }
}

/// Git's words for a branch against its upstream.
/// `status -sb`'s first line, as git writes it.
fn branch_header(repo: &Repository, st: &dmv_repo::StatusListing) -> Result<String> {
    let Some(branch) = &st.branch else {
        return Ok("## HEAD (no branch)".into());
    };
    let short = branch.strip_prefix(BRANCHES).unwrap_or(branch);
    if repo.refs.get(branch)?.is_none() {
        return Ok(format!("## No commits yet on {short}"));
    }
    let Some(t) = repo.history().tracking()? else {
        return Ok(format!("## {short}"));
    };
    let counts = match t.counts {
        None => " [gone]".to_string(),
        Some((0, 0)) => String::new(),
        Some((ahead, 0)) => format!(" [ahead {ahead}]"),
        Some((0, behind)) => format!(" [behind {behind}]"),
        Some((ahead, behind)) => format!(" [ahead {ahead}, behind {behind}]"),
    };
    Ok(format!("## {short}...{}{counts}", t.upstream))
}

fn tracking_words(t: &dmv_repo::Tracking) -> String {
    let up = &t.upstream;
    let commits = |n: usize| {
        if n == 1 {
            "1 commit".to_string()
        } else {
            format!("{n} commits")
        }
    };
    match t.counts {
        None => format!("Your branch is based on '{up}', but the upstream is gone.\n  (use \"dmv push -u\" to make it again)"),
        Some((0, 0)) => format!("Your branch is up to date with '{up}'."),
        Some((ahead, 0)) => format!("Your branch is ahead of '{up}' by {}.\n  (use \"dmv push\" to publish your local commits)", commits(ahead)),
        Some((0, behind)) => format!("Your branch is behind '{up}' by {}, and can be fast-forwarded.\n  (use \"dmv pull\" to update your local branch)", commits(behind)),
        Some((ahead, behind)) => {
            format!("Your branch and '{up}' have diverged,\nand have {ahead} and {behind} different commits each, respectively.\n  (use \"dmv pull\" to merge the remote branch into yours)")
        }
    }
}

/// HEAD's branch as a commit's first line names it.
fn branch_label(repo: &dmv_repo::Repository) -> Result<String> {
    Ok(match repo.head()? {
        Head::Branch(b) => b.strip_prefix(BRANCHES).unwrap_or(&b).to_string(),
        Head::Detached(_) => "detached HEAD".into(),
    })
}

#[derive(Args)]
pub struct ResetArgs {
    /// Move HEAD only: what is staged and the files stay.
    #[arg(long, conflicts_with_all = ["mixed", "hard"])]
    soft: bool,
    /// Move HEAD and make the staging area the commit's; the files stay (the default).
    #[arg(long, conflicts_with = "hard")]
    mixed: bool,
    /// Move HEAD and make the staging area and the tracked files the
    /// commit's: uncommitted changes to tracked files are lost (untracked
    /// files stay).
    #[arg(long)]
    hard: bool,
    /// The commit to move to (default HEAD).
    rev: Option<String>,
    /// Paths to unstage instead, back to their version in REV (default
    /// HEAD): `reset HEAD FILE`, `reset -- FILE`, as `restore --staged`.
    paths: Vec<PathBuf>,
    /// Paths after `--`.
    #[arg(last = true, hide = true)]
    after_dashes: Vec<PathBuf>,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn reset(a: ResetArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_worktree()?;
    // As git: a first word that names no revision but a path is a path.
    let (rev, mut paths) = match a.rev {
        Some(r)
            if a.paths.is_empty()
                && a.after_dashes.is_empty()
                && repo.resolve(&r).is_err()
                && std::path::Path::new(&r).exists() =>
        {
            (None, vec![PathBuf::from(r)])
        }
        r => (r, a.paths),
    };
    paths.extend(a.after_dashes);
    let target = repo.resolve(rev.as_deref().unwrap_or("HEAD"))?;
    if !paths.is_empty() {
        if a.soft || a.hard {
            bail!("cannot do a {} reset with paths (as in git): `dmv restore --staged PATH` unstages, `dmv restore --source REV PATH` brings a file back", if a.soft { "soft" } else { "hard" });
        }
        let specs = repo_paths(&repo, &paths)?;
        dmv_sync::restore(
            &repo,
            &specs,
            Some(target),
            true,
            &crate::progress::Phases::default(),
        )?;
        return Ok(0);
    }
    let mode = match (a.soft, a.hard) {
        (true, _) => dmv_repo::ResetMode::Soft,
        (_, true) => dmv_repo::ResetMode::Hard,
        _ => dmv_repo::ResetMode::Mixed,
    };
    let p = Bar::new("checking out");
    repo.reset(target, mode, &p)?;
    if a.hard && !quiet {
        println!(
            "HEAD is now at {} {}",
            target.short(),
            repo.commit(&target)?.message.lines().next().unwrap_or("")
        );
    }
    Ok(0)
}

#[derive(Args)]
pub struct StashArgs {
    #[command(subcommand)]
    action: Option<StashAction>,
    /// Put untracked files aside too (not ignored ones); they come back untracked.
    #[arg(short = 'u', long = "include-untracked")]
    include_untracked: bool,
}

#[derive(clap::Subcommand)]
enum StashAction {
    /// Put the changes to tracked files aside (the default).
    Push {
        #[arg(short, long)]
        message: Option<String>,
        /// Put untracked files aside too (not ignored ones); they come back untracked.
        #[arg(short = 'u', long = "include-untracked")]
        include_untracked: bool,
        /// Only the changes at or under these paths: `stash push -- PATH…`.
        #[arg(last = true)]
        paths: Vec<PathBuf>,
    },
    /// Bring a stash back (default the newest, 0) and remove it.
    Pop {
        #[arg(value_parser = stash_index)]
        index: Option<usize>,
        /// Stage again what was staged (otherwise changes come back unstaged, new files staged).
        #[arg(long = "index")]
        index_too: bool,
    },
    /// Bring a stash back and keep it.
    Apply {
        #[arg(value_parser = stash_index)]
        index: Option<usize>,
        /// Stage again what was staged.
        #[arg(long = "index")]
        index_too: bool,
    },
    /// The stashes, newest first.
    List,
    /// What a stash changed (default the newest): per file, or with -p as a diff.
    Show {
        #[arg(value_parser = stash_index)]
        index: Option<usize>,
        #[arg(short = 'p', long)]
        patch: bool,
    },
    /// Remove every stash.
    Clear,
    /// Remove a stash (default the newest).
    Drop {
        #[arg(value_parser = stash_index)]
        index: Option<usize>,
    },
}

/// A stash as `stash apply` and the others take it: `2` or `stash@{2}`.
fn stash_index(text: &str) -> std::result::Result<usize, String> {
    let n = text
        .strip_prefix("stash@{")
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(text);
    n.parse()
        .map_err(|_| format!("'{text}' is not a stash: a number or stash@{{N}}"))
}

pub fn stash(a: StashArgs) -> Result<u8> {
    let repo = open_worktree()?;
    let p = Bar::new("stash");
    match a.action.unwrap_or(StashAction::Push {
        message: None,
        include_untracked: false,
        paths: Vec::new(),
    }) {
        StashAction::Push {
            message,
            include_untracked,
            paths,
        } => match repo.merges().stash_push_paths(
            message.as_deref(),
            include_untracked || a.include_untracked,
            &repo_paths(&repo, &paths)?,
            &p,
        )? {
            Some(s) => println!("Saved working directory and index state {}", s.message),
            None => {
                println!("No local changes to save");
                return Ok(1);
            }
        },
        StashAction::Pop { index, index_too } => {
            let s = repo
                .merges()
                .stash_apply(index.unwrap_or(0), true, index_too, &p)?;
            println!(
                "Dropped stash@{{{}}} ({})",
                index.unwrap_or(0),
                s.id.short()
            );
        }
        StashAction::Apply { index, index_too } => {
            repo.merges()
                .stash_apply(index.unwrap_or(0), false, index_too, &p)?;
        }
        StashAction::List => {
            for (i, s) in repo.merges().stashes()?.iter().enumerate() {
                println!("stash@{{{i}}}: {}", s.message);
            }
        }
        StashAction::Show { index, patch } => {
            crate::terminal::decide_colour(&repo, None);
            let _pager = crate::terminal::start_pager(&repo);
            crate::inspect::show_commit_changes(
                &repo,
                &repo.merges().stash(index.unwrap_or(0))?.id,
                patch,
            )?;
        }
        StashAction::Clear => {
            repo.merges().stash_clear()?;
        }
        StashAction::Drop { index } => {
            let s = repo.merges().stash_drop(index.unwrap_or(0))?;
            println!(
                "Dropped stash@{{{}}} ({})",
                index.unwrap_or(0),
                s.id.short()
            );
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct CleanArgs {
    /// Only list what would be deleted.
    #[arg(short = 'n', long)]
    dry_run: bool,
    /// Delete (required unless -n, as git's clean.requireForce).
    #[arg(short, long)]
    force: bool,
    /// Also files in folders that hold no tracked file.
    #[arg(short = 'd')]
    folders: bool,
    /// Only at or under these paths.
    paths: Vec<PathBuf>,
}

pub fn clean(a: CleanArgs) -> Result<u8> {
    if !a.force && !a.dry_run {
        bail!("refusing to delete untracked files without -f (or -n to see which)");
    }
    let repo = open_worktree()?;
    let specs = repo_paths(&repo, &a.paths)?;
    let doomed = repo.worktree().clean(&specs, a.folders, a.dry_run)?;
    let verb = if a.dry_run {
        "Would remove"
    } else {
        "Removing"
    };
    for p in doomed {
        println!("{verb} {}", show_path(&p));
    }
    Ok(0)
}

#[derive(Args)]
pub struct RevertArgs {
    /// The commit whose changes a new commit on HEAD undoes.
    rev: String,
    /// Keep the message `Revert "SUBJECT"` as it is (it always is: no editor is opened).
    #[arg(long)]
    no_edit: bool,
}

pub fn revert(a: RevertArgs) -> Result<u8> {
    let repo = open_worktree()?;
    let target = repo.resolve(&a.rev)?;
    let p = Bar::new("checking out");
    let id = dmv_sync::revert(&repo, target, &p)?;
    println!(
        "[{} {}] {}",
        branch_label(&repo)?,
        id.short(),
        repo.commit(&id)?.message.lines().next().unwrap_or("")
    );
    Ok(0)
}

pub fn commit(a: CommitArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_worktree()?;
    // Before an editor is opened for a message that could not be signed.
    repo.signer()?;
    if a.paths.is_empty() && (a.include || (a.only && !a.allow_empty && !a.amend)) {
        bail!("no paths with --include/--only does not make sense");
    }
    if !a.paths.is_empty() && a.all {
        bail!("paths with -a does not make sense: `dmv commit -a` commits every tracked file");
    }
    let specs = repo_paths(&repo, &a.paths)?;
    let _wlock = repo.lock_worktree()?;
    if !specs.is_empty() && a.include {
        repo.add_settling(&specs, true, &Bar::new("adding"))?;
    } else if !specs.is_empty() {
        return commit_only(&repo, &a, &specs, quiet);
    }
    let squash = repo.dmv.join(SQUASH_MSG);
    let mut message = (!a.message.is_empty()).then(|| a.message.join("\n\n"));
    // After `merge --squash`, its prepared message (edited when an editor is there).
    if message.is_none() && !a.amend && repo.merges().merge_state()?.is_none() {
        if let Ok(prepared) = std::fs::read_to_string(&squash) {
            if has_something_to_commit(&repo, a.all)? {
                message = match editor() {
                    Some(editor) if !a.no_edit => {
                        edit_text(&editor, &repo.dmv.join("COMMIT_EDITMSG"), &prepared)?
                    }
                    // As git's cleanup of a message not edited: no trailing blanks.
                    _ => Some(
                        prepared
                            .lines()
                            .map(str::trim_end)
                            .collect::<Vec<_>>()
                            .join("\n")
                            .trim()
                            .to_string(),
                    ),
                };
                if message.is_none() {
                    eprintln!("Aborting commit due to empty commit message.");
                    return Ok(1);
                }
            }
        }
    }
    if message.is_none()
        && !a.amend
        && repo.merges().merge_state()?.is_none()
        && (a.allow_empty || has_something_to_commit(&repo, a.all)?)
    {
        // No message to keep: git's word for an empty one.
        if a.no_edit {
            eprintln!("Aborting commit due to empty commit message.");
            return Ok(1);
        }
        if let Some(editor) = editor() {
            match edit_message(&repo, &editor)? {
                Some(edited) => message = Some(edited),
                None => {
                    eprintln!("Aborting commit due to empty commit message.");
                    return Ok(1);
                }
            }
        }
    }
    let request = CommitRequest {
        message: message.as_deref(),
        all: a.all,
        amend: a.amend,
        allow_empty: a.allow_empty,
    };
    let p = Bar::new("adding");
    let (check, committed) = dmv_sync::commit(&repo, &request, &p)?;
    if let dmv_sync::CommitLockCheck::Unchecked { remote, why } = check {
        eprintln!("warning: could not ask {remote} whether someone else holds a lock on the files you changed ({why}); committing anyway (the push will be checked)");
    }
    if matches!(committed, Committed::Made { .. }) && squash.exists() {
        std::fs::remove_file(&squash)
            .with_context(|| format!("cannot remove {}", squash.display()))?;
    }
    report_commit(&repo, committed, quiet)
}

/// `merge --squash`'s prepared message, which the next `commit` takes.
pub(crate) const SQUASH_MSG: &str = "SQUASH_MSG";

/// `commit PATH…` (git's `--only`): those paths as the working tree has
/// them, on HEAD's tree; the rest of what is staged stays staged.
fn commit_only(repo: &Repository, a: &CommitArgs, specs: &[Vec<u8>], quiet: bool) -> Result<u8> {
    if a.amend {
        bail!("commit --amend with paths is not supported yet: stage the paths, then `dmv commit --amend`");
    }
    let message = match a.message.is_empty() {
        false => a.message.join("\n\n"),
        true => match editor() {
            Some(editor) => match edit_message(repo, &editor)? {
                Some(m) => m,
                None => {
                    eprintln!("Aborting commit due to empty commit message.");
                    return Ok(1);
                }
            },
            None => return Err(dmv_repo::RepoError::MessageRequired.into()),
        },
    };
    if let dmv_sync::CommitLockCheck::Unchecked { remote, why } =
        dmv_sync::check_commit(repo, true)?
    {
        eprintln!("warning: could not ask {remote} whether someone else holds a lock on the files you changed ({why}); committing anyway (the push will be checked)");
    }
    let committed = match repo
        .merges()
        .commit_only(specs, &message, &Bar::new("adding"))?
    {
        Some(id) => Committed::Made {
            id,
            root: repo.commit(&id)?.parents.is_empty(),
        },
        None => Committed::Nothing(NothingToCommit::ChangesNotStaged),
    };
    report_commit(repo, committed, quiet)
}

/// What a commit prints: git's "[branch id] subject" and the summary, or
/// why there was nothing to commit.
fn report_commit(repo: &Repository, committed: Committed, quiet: bool) -> Result<u8> {
    match committed {
        Committed::Made { .. } if quiet => Ok(0),
        Committed::Made { id, root } => {
            let root = if root { " (root-commit)" } else { "" };
            println!(
                "[{}{root} {}] {}",
                branch_label(repo)?,
                id.short(),
                repo.commit(&id)?.message.lines().next().unwrap_or("")
            );
            println!("{}", changed_summary(&repo.history().commit_changes(&id)?));
            Ok(0)
        }
        // As git says it: what there is instead, and what to do about it.
        Committed::Nothing(why) => {
            println!(
                "{}",
                match why {
                    NothingToCommit::ChangesNotStaged => "no changes added to commit (use \"dmv add\" and/or \"dmv commit -a\")",
                    NothingToCommit::OnlyUntracked => "nothing added to commit but untracked files present (use \"dmv add\" to track)",
                    NothingToCommit::NoFiles => "nothing to commit (create/copy files and use \"dmv add\" to track)",
                    NothingToCommit::Clean => "nothing to commit, working tree clean",
                }
            );
            Ok(1)
        }
    }
}

#[derive(Args)]
pub struct RestoreArgs {
    /// Take the content from this commit instead of the staging area.
    #[arg(long, short)]
    source: Option<String>,
    /// Restore the staging area (unstage) instead of the working tree.
    #[arg(long, short = 'S')]
    staged: bool,
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn restore(a: RestoreArgs) -> Result<u8> {
    let repo = open_worktree()?;
    let specs = repo_paths(&repo, &a.paths)?;
    let source = a.source.map(|s| repo.resolve(&s)).transpose()?;
    dmv_sync::restore(
        &repo,
        &specs,
        source,
        a.staged,
        &crate::progress::Phases::default(),
    )?;
    Ok(0)
}

#[derive(Args)]
pub struct BranchArgs {
    /// Branch to create (lists branches when omitted).
    name: Option<String>,
    /// Where the new branch starts (default HEAD).
    start: Option<String>,
    /// With -d or -D: more branches to delete.
    #[arg(hide = true)]
    more: Vec<String>,
    /// Delete the named branches (each only if HEAD or its remote-tracking branch holds its commits).
    #[arg(short, long, conflicts_with = "rename")]
    delete: bool,
    /// Delete the named branch even if its commits would be left to gc.
    #[arg(short = 'D', conflicts_with_all = ["rename", "delete"])]
    force_delete: bool,
    /// Rename: `branch -m OLD NEW`.
    #[arg(short = 'm', long = "move")]
    rename: bool,
    /// List the remote-tracking branches too.
    #[arg(short = 'a', long = "all")]
    all: bool,
    /// List the remote-tracking branches only.
    #[arg(short = 'r', long = "remotes", conflicts_with = "all")]
    remotes: bool,
    /// Print the branch HEAD is on (nothing when detached).
    #[arg(long, conflicts_with_all = ["all", "remotes", "delete", "rename"])]
    show_current: bool,
    /// With each branch, its commit and that commit's subject.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    verbose: u8,
    #[arg(long)]
    json: bool,
}

pub fn branch(a: BranchArgs) -> Result<u8> {
    let repo = open_repo()?;
    if a.show_current {
        if let Head::Branch(b) = repo.head()? {
            println!("{}", b.strip_prefix(BRANCHES).unwrap_or(&b));
        }
        return Ok(0);
    }
    match (a.name, a.delete || a.force_delete, a.rename) {
        (None, _, _) => {
            let current = repo.history().head_branch()?;
            let mut list = match a.remotes {
                true => Vec::new(),
                false => repo.refs.list(BRANCHES)?,
            };
            if a.all || a.remotes {
                list.extend(repo.refs.list(REMOTE_BRANCHES)?);
            }
            if a.json {
                let v: Vec<_> = list
                    .iter()
                    .map(|(n, id)| serde_json::json!({"name": n.strip_prefix(BRANCHES).unwrap_or(n), "id": id.to_hex(), "current": Some(n) == current.as_ref()}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                // As git: `-r` names a remote branch `origin/main`, `-a` `remotes/origin/main`.
                let shown = |n: &str| match a.remotes {
                    true => n.trim_start_matches(REMOTE_BRANCHES).to_string(),
                    false => n
                        .strip_prefix(BRANCHES)
                        .map_or_else(|| n.trim_start_matches("refs/").to_string(), str::to_string),
                };
                let width = list
                    .iter()
                    .map(|(n, _)| shown(n).chars().count())
                    .max()
                    .unwrap_or(0);
                for (name, id) in &list {
                    let mark = if Some(name) == current.as_ref() {
                        "*"
                    } else {
                        " "
                    };
                    let subject = || -> Result<String> {
                        Ok(repo
                            .commit(id)?
                            .message
                            .lines()
                            .next()
                            .unwrap_or("")
                            .to_string())
                    };
                    let upstream = name
                        .strip_prefix(BRANCHES)
                        .and_then(|b| repo.config.upstreams.get(b))
                        .filter(|_| a.verbose >= 2);
                    match (a.verbose, upstream) {
                        (0, _) => println!("{mark} {}", shown(name)),
                        (_, Some(up)) => println!(
                            "{mark} {:<width$} {} [{}/{}] {}",
                            shown(name),
                            id.short(),
                            up.remote,
                            up.branch,
                            subject()?
                        ),
                        (_, None) => println!(
                            "{mark} {:<width$} {} {}",
                            shown(name),
                            id.short(),
                            subject()?
                        ),
                    }
                }
            }
        }
        (Some(name), true, _) => {
            // As git: each name is tried; a refusal is reported and the others still go.
            let mut failed = false;
            for name in std::iter::once(name).chain(a.start).chain(a.more) {
                match repo.history().delete_branch(&name, a.force_delete) {
                    Ok(old) => println!("Deleted branch {name} (was {}).", old.short()),
                    Err(e) => {
                        let e = anyhow::Error::from(e);
                        eprintln!("dmv: {e}{}", crate::hints::hint(&e).unwrap_or_default());
                        failed = true;
                    }
                }
            }
            return Ok(if failed { 1 } else { 0 });
        }
        (Some(_), false, _) if !a.more.is_empty() => {
            bail!("usage: dmv branch NAME [START], dmv branch -m OLD NEW, dmv branch -d NAME...")
        }
        (Some(old_name), false, true) => {
            let new_name = a
                .start
                .ok_or_else(|| anyhow!("usage: dmv branch -m OLD NEW"))?;
            repo.history().rename_branch(&old_name, &new_name)?;
        }
        (Some(name), false, false) => {
            let start = repo.resolve(a.start.as_deref().unwrap_or("HEAD"))?;
            repo.create_ref(&branch_ref(&name), start, "branch: created")?;
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct SwitchArgs {
    /// Create the branch (at HEAD or START) and switch to it.
    #[arg(short = 'c', long = "create")]
    create: bool,
    /// Check out a commit without a branch (HEAD detached): `dmv switch --detach REV`.
    #[arg(long, conflicts_with = "create")]
    detach: bool,
    /// The branch (`-`: the one checked out before), or with --detach any revision.
    branch: String,
    start: Option<String>,
    #[command(flatten)]
    quiet: Quiet,
}

fn switch_to_branch(repo: &mut Repository, name: &str, quiet: bool) -> Result<()> {
    let p = Bar::new("checkout");
    let made_from = repo.switch_to_branch(name, &p)?;
    if !quiet {
        if let Some(remote_branch) = made_from {
            eprintln!("Branch '{name}' set up to follow '{remote_branch}'.");
        }
        eprintln!("Switched to branch '{name}'");
    }
    Ok(())
}

pub fn switch(a: SwitchArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let mut repo = open_worktree()?;
    if a.detach {
        return detach_at(&repo, &a.branch, quiet);
    }
    if (a.branch == "-" || a.branch == "@{-1}") && !a.create {
        return switch_back(&mut repo, quiet);
    }
    if !a.create && !is_branch(&repo, &a.branch)? && repo.resolve(&a.branch).is_ok() {
        bail!("a branch is expected, got the revision '{}': `dmv switch --detach {}` checks it out without a branch", a.branch, a.branch);
    }
    if a.create {
        return create_and_switch(&mut repo, &a.branch, a.start.as_deref(), quiet);
    }
    switch_to_branch(&mut repo, &a.branch, quiet)?;
    Ok(0)
}

/// `switch -c NAME START` / `checkout -b`: the branch is made, and removed
/// again if the switch is refused (uncommitted changes in the way), as git
/// leaves no branch behind then.
fn create_and_switch(
    repo: &mut Repository,
    name: &str,
    start: Option<&str>,
    quiet: bool,
) -> Result<u8> {
    let start = repo.resolve(start.unwrap_or("HEAD"))?;
    repo.create_ref(&branch_ref(name), start, "branch: created")?;
    if let Err(e) = switch_to_branch(repo, name, quiet) {
        let _ = repo.history().delete_branch(name, true);
        return Err(e);
    }
    Ok(0)
}

#[derive(Args)]
pub struct CheckoutArgs {
    /// Create this branch at the target and switch to it.
    #[arg(short = 'b')]
    new_branch: Option<String>,
    /// A branch, or any revision (detaches HEAD).
    target: Option<String>,
    /// Paths to restore from the staging area (`dmv checkout -- PATH...`),
    /// or from the target, staged too (`dmv checkout REV -- PATH...`).
    #[arg(last = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn checkout(a: CheckoutArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let mut repo = open_worktree()?;
    if !a.paths.is_empty() {
        let specs = repo_paths(&repo, &a.paths)?;
        // As git's: a revision's version of the paths is staged, then written.
        if let Some(target) = &a.target {
            let source = repo.resolve(target)?;
            repo.worktree().restore(&specs, Some(source), true)?;
        }
        dmv_sync::restore(
            &repo,
            &specs,
            None,
            false,
            &crate::progress::Phases::default(),
        )?;
        return Ok(0);
    }
    if let Some(b) = a.new_branch {
        return create_and_switch(&mut repo, &b, a.target.as_deref(), quiet);
    }
    let target = a
        .target
        .as_ref()
        .ok_or_else(|| anyhow!("usage: dmv checkout BRANCH|REV or dmv checkout -- PATH"))?;
    if target == "-" || target == "@{-1}" {
        return switch_back(&mut repo, quiet);
    }
    if is_branch(&repo, target)? {
        switch_to_branch(&mut repo, target, quiet)?;
        return Ok(0);
    }
    detach_at(&repo, target, quiet)
}

/// Whether `name` is a branch here (a revision such as `main~1` is not).
fn is_branch(repo: &Repository, name: &str) -> Result<bool> {
    let full = branch_ref(name);
    Ok(dmv_repo::validate_ref_name(&full).is_ok() && repo.refs.get(&full)?.is_some())
}

/// Checks out a revision with HEAD detached.
fn detach_at(repo: &Repository, rev: &str, quiet: bool) -> Result<u8> {
    let id = repo
        .resolve(rev)
        .with_context(|| format!("cannot check out '{rev}'"))?;
    let p = Bar::new("checkout");
    repo.switch_to(&Head::Detached(id), &p)?;
    if !quiet {
        eprintln!("HEAD is now at {} (detached)", id.short());
    }
    Ok(0)
}

/// `switch -` / `checkout -`: back to what was checked out before.
fn switch_back(repo: &mut Repository, quiet: bool) -> Result<u8> {
    match repo.previous_checkout()? {
        Head::Branch(full) => {
            let name = full.strip_prefix(BRANCHES).unwrap_or(&full).to_string();
            switch_to_branch(repo, &name, quiet)?;
            Ok(0)
        }
        Head::Detached(id) => detach_at(repo, &id.to_hex(), quiet),
    }
}

#[derive(Args)]
pub struct TagArgs {
    /// Tag to create (lists tags when omitted); with --list, a pattern.
    name: Option<String>,
    /// What the tag points to (default HEAD); with --list, a second pattern.
    rev: Option<String>,
    #[arg(short, long)]
    delete: bool,
    /// Move the tag if it exists.
    #[arg(short, long, conflicts_with = "delete")]
    force: bool,
    /// List the tags, those matching a pattern (`v1.*`) when given.
    #[arg(short, long, conflicts_with = "delete")]
    list: bool,
    /// An annotated tag: a tag object with who made it, when, and a message
    /// (from -m, -F, else the editor).
    #[arg(short, long, conflicts_with_all = ["delete", "list"])]
    annotate: bool,
    /// The annotated tag's message (implies -a); several make paragraphs.
    #[arg(short, long, conflicts_with_all = ["delete", "list"])]
    message: Vec<String>,
    /// The annotated tag's message from a file (`-` for standard input; implies -a).
    #[arg(short = 'F', long, conflicts_with_all = ["delete", "list", "message"])]
    file: Option<PathBuf>,
    /// Listing: each tag with the first N lines of its message (1 when N
    /// is not given; a plain tag shows its commit's).
    #[arg(short = 'n', num_args = 0..=1, default_missing_value = "1", require_equals = false, conflicts_with = "delete")]
    lines: Option<String>,
}

pub fn tag(a: TagArgs) -> Result<u8> {
    let repo = open_repo()?;
    let name = match a.name {
        Some(name) if !a.list && a.lines.is_none() => name,
        first => {
            // As git's `-n<num>`: a number only when attached; `tag -n v1*` lists with a pattern.
            let (lines, pattern) = match a.lines.as_deref().map(|n| (n, n.parse::<usize>())) {
                Some((_, Ok(n))) => (Some(n), None),
                Some((p, Err(_))) => (Some(1), Some(p.to_string())),
                None => (None, None),
            };
            return list_tags(&repo, pattern.iter().chain(&first).chain(&a.rev), lines);
        }
    };
    if a.delete {
        let old = repo.history().delete_tag(&name)?;
        println!("Deleted tag '{name}' (was {})", old.short());
        return Ok(0);
    }
    let id = repo.resolve(a.rev.as_deref().unwrap_or("HEAD"))?;
    if !a.force && repo.refs.get(&tag_ref(&name))?.is_some() {
        bail!("tag '{name}' already exists");
    }
    let old = if a.annotate || !a.message.is_empty() || a.file.is_some() {
        // Refused before the editor opens, as a commit is.
        repo.signer()?;
        let Some(message) = tag_message(&repo, &name, &a.message, a.file.as_deref())? else {
            eprintln!("Aborting tag: the message is empty.");
            return Ok(1);
        };
        repo.history()
            .create_annotated_tag(&name, id, &message, a.force)?
            .1
    } else if a.force {
        repo.history().set_tag(&name, id)?
    } else {
        repo.create_ref(&tag_ref(&name), id, "tag: created")?;
        None
    };
    if let Some(old) = old.filter(|old| *old != id) {
        println!("Updated tag '{name}' (was {})", old.short());
    }
    Ok(0)
}

/// `tag -l [PATTERN…]`, with `-n` the first lines of each tag's message.
fn list_tags<'a>(
    repo: &Repository,
    patterns: impl Iterator<Item = &'a String>,
    lines: Option<usize>,
) -> Result<u8> {
    let mut set = globset::GlobSetBuilder::new();
    let mut any = false;
    for p in patterns {
        set.add(globset::Glob::new(p).map_err(|e| anyhow!("bad pattern '{p}': {e}"))?);
        any = true;
    }
    let set = set.build()?;
    let mut out = std::io::stdout().lock();
    for (full, id) in repo.refs.list(TAGS)? {
        let short = full.trim_start_matches(TAGS);
        if any && !set.is_match(short) {
            continue;
        }
        let Some(n) = lines else {
            writeln!(out, "{short}")?;
            continue;
        };
        let peeled = repo.peel(&id)?;
        let message = match peeled == id {
            true => repo.commit(&id).map(|c| c.message).unwrap_or_default(),
            false => repo.annotated_tag(&id)?.message,
        };
        let mut text = message.lines().take(n.max(1));
        writeln!(out, "{short:<15} {}", text.next().unwrap_or(""))?;
        for line in text {
            writeln!(out, "{}", format!("{:<15}     {line}", "").trim_end())?;
        }
    }
    Ok(0)
}

/// An annotated tag's message: `-m` paragraphs, `-F` file, else what the
/// person writes in the editor. None: left empty.
fn tag_message(
    repo: &Repository,
    name: &str,
    messages: &[String],
    file: Option<&std::path::Path>,
) -> Result<Option<String>> {
    let text = if !messages.is_empty() {
        messages.join("\n\n")
    } else if let Some(file) = file {
        let mut text = String::new();
        if file == std::path::Path::new("-") {
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("cannot read the message from standard input")?;
        } else {
            text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
        }
        text
    } else {
        let editor = editor().ok_or_else(|| {
            anyhow!("no message for the tag: give -m MESSAGE (or set DMV_EDITOR/EDITOR)")
        })?;
        let template = format!("\n#\n# Write a message for tag:\n#   {name}\n# Lines starting with '#' will be ignored.\n");
        return Ok(edit_text(&editor, &repo.dmv.join("TAG_EDITMSG"), &template)?.map(|m| m + "\n"));
    };
    let text = text.trim().to_string();
    Ok((!text.is_empty()).then(|| text + "\n"))
}
