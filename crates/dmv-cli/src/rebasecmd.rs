//! `dmv rebase`, with `-i`'s todo list edited in the person's editor.

use std::fmt::Write as _;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dmv_repo::{RebaseAction, RebaseEditor, RebaseOutcome, RebaseStep, Repository};

use crate::mergecmd::report_conflicts;
use crate::progress::{Bar, Quiet};
use crate::repo_args::open_worktree;
use crate::work::{edit_text, editor};

#[derive(Args)]
#[command(
    after_help = "The commits of the current branch that UPSTREAM lacks are picked onto it one by one \
(as `dmv cherry-pick` picks them: text files merged line by line), then the branch is moved to the last of them. \
A pick that conflicts stops the rebase: settle the conflicts (`dmv add`, `dmv resolve`), then `dmv rebase --continue`; \
`--skip` leaves that commit out, `--abort` puts everything back.\n\
With -i the plan opens in the editor: pick, reword, squash, fixup or drop each commit, in any order.\n\
Exit status: 0 done (or nothing to do), 1 stopped on conflicts, 128 error."
)]
pub struct RebaseArgs {
    /// Where to put the branch's commits (default: the branch's upstream, @{u}).
    upstream: Option<String>,
    /// Put them onto this commit instead of onto UPSTREAM (the commits picked are still those UPSTREAM lacks).
    #[arg(long)]
    onto: Option<String>,
    /// Edit the plan first: reorder, reword, squash, fix up or drop commits.
    #[arg(short, long)]
    interactive: bool,
    /// Go on after the conflicts of the stopped pick are settled.
    #[arg(long = "continue", conflicts_with_all = ["skip", "abort", "upstream", "onto", "interactive"])]
    continue_rebase: bool,
    /// Leave out the commit whose pick stopped, and go on.
    #[arg(long, conflicts_with_all = ["abort", "upstream", "onto", "interactive"])]
    skip: bool,
    /// Give up: the branch, HEAD and files back to where the rebase started.
    #[arg(long, conflicts_with_all = ["upstream", "onto", "interactive"])]
    abort: bool,
    #[command(flatten)]
    quiet: Quiet,
}

/// New messages for reword and squash, asked in the editor.
struct EditorMessages<'r> {
    repo: &'r Repository,
}

impl RebaseEditor for EditorMessages<'_> {
    fn message(&self, proposed: &str) -> Option<String> {
        let editor = editor()?;
        let text = format!("{proposed}\n\n# Please enter the commit message. Lines starting with '#' will be ignored;\n# an empty message keeps the one above.\n");
        edit_text(&editor, &self.repo.dmv.join("COMMIT_EDITMSG"), &text)
            .ok()
            .flatten()
    }
}

pub fn rebase(a: RebaseArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_worktree()?;
    let messages = EditorMessages { repo: &repo };
    let p = Bar::new("rebasing");
    let outcome = if a.abort {
        repo.merges().rebase_abort(&p)?;
        if !quiet {
            println!("Rebase aborted.");
        }
        return Ok(0);
    } else if a.continue_rebase {
        repo.merges().rebase_continue(&messages, &p)?
    } else if a.skip {
        repo.merges().rebase_skip(&messages, &p)?
    } else {
        let upstream_name = a.upstream.clone().unwrap_or_else(|| "@{u}".to_string());
        let upstream = repo.resolve(&upstream_name).map_err(|e| match a.upstream {
            None => anyhow!("{e}: this branch follows no upstream; name one, `dmv rebase BRANCH`"),
            Some(_) => e.into(),
        })?;
        let onto = a
            .onto
            .as_deref()
            .map(|o| repo.resolve(o))
            .transpose()?
            .unwrap_or(upstream);
        let mut todo = repo.merges().rebase_plan(upstream)?;
        if a.interactive {
            match edit_todo(&repo, &todo, onto)? {
                Some(edited) => todo = edited,
                None => {
                    println!("Nothing to do.");
                    return Ok(0);
                }
            }
        }
        dmv_sync::rebase(&repo, onto, todo, &messages, &p)?
    };
    p.finish();
    report(&repo, outcome, quiet)
}

/// Says how a rebase ended (exit 1 when it stopped on conflicts); `pull --rebase` ends here too.
pub fn report(repo: &Repository, outcome: RebaseOutcome, quiet: bool) -> Result<u8> {
    match outcome {
        RebaseOutcome::UpToDate if !quiet => println!("Current branch is up to date."),
        RebaseOutcome::Done(_) if !quiet => match repo.history().head_branch()? {
            Some(b) => println!("Successfully rebased and updated {b}."),
            None => println!("Successfully rebased (HEAD detached)."),
        },
        RebaseOutcome::Stopped { commit, conflicts } => {
            let subject = repo
                .commit(&commit)?
                .message
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            println!("Could not apply {} {subject}", commit.short());
            report_conflicts(
                repo,
                &conflicts,
                "edit the files with conflict markers and `dmv add` them, settle the others with `dmv resolve`, then run `dmv rebase --continue` (or `--skip`, or `--abort`)",
            )?;
            return Ok(1);
        }
        _ => {}
    }
    Ok(0)
}

/// The plan in the editor, as git's todo list; None when the person emptied it.
fn edit_todo(
    repo: &Repository,
    todo: &[RebaseStep],
    onto: dmv_repo::store::ObjectId,
) -> Result<Option<Vec<RebaseStep>>> {
    let editor = editor().ok_or_else(|| {
        anyhow!("no editor to edit the plan in (set DMV_EDITOR, VISUAL or EDITOR)")
    })?;
    let mut text = String::new();
    for step in todo {
        let subject = repo
            .commit(&step.commit)?
            .message
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        writeln!(
            text,
            "{} {} {subject}",
            step.action.word(),
            step.commit.short()
        )?;
    }
    write!(
        text,
        "\n# Rebase onto {} ({} commits)\n#\n# Commands:\n# p, pick <commit> = use commit\n# r, reword <commit> = use commit, but edit the commit message\n\
         # s, squash <commit> = use commit, but meld into previous commit\n# f, fixup <commit> = like \"squash\", but discard this commit's message\n\
         # d, drop <commit> = remove commit\n#\n# These lines can be re-ordered; they are executed from top to bottom.\n\
         # If you remove a line here THAT COMMIT WILL BE LOST.\n# However, if you remove everything, the rebase will be aborted.\n",
        onto.short(),
        todo.len()
    )?;
    let Some(edited) = edit_text(&editor, &repo.dmv.join("rebase-todo"), &text)? else {
        return Ok(None);
    };
    let mut steps = Vec::new();
    for (n, line) in edited
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let mut words = line.split_whitespace();
        let (Some(word), Some(rev)) = (words.next(), words.next()) else {
            bail!("line {} of the plan: '{line}' is not ACTION COMMIT", n + 1)
        };
        let action = RebaseAction::parse(word).ok_or_else(|| {
            anyhow!(
                "line {} of the plan: unknown action '{word}' (pick, reword, squash, fixup, drop)",
                n + 1
            )
        })?;
        let commit = repo
            .resolve(rev)
            .map_err(|e| anyhow!("line {} of the plan: {e}", n + 1))?;
        steps.push(RebaseStep { action, commit });
    }
    Ok(Some(steps))
}
