//! `dmv bisect`: git's commands and words over DMV's history; the rules
//! (which commit next, the state) are dmv-repo's `Bisect`.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use dmv_repo::store::ObjectId;
use dmv_repo::{Bisect, BisectStep, Head, Repository, Verdict};

use crate::progress::Bar;
use crate::repo_args::open_worktree;

#[derive(Args)]
#[command(
    after_help = "Exit status: 0 done (or waiting for more verdicts), 2 only skipped commits left, 128 error."
)]
pub struct BisectArgs {
    #[command(subcommand)]
    command: BisectCommand,
}

#[derive(Subcommand)]
enum BisectCommand {
    /// Begin: note where HEAD is; BAD (default none yet) and GOOD commits may be given at once.
    Start {
        /// The bad commit, then good ones.
        revs: Vec<String>,
    },
    /// The commit (default HEAD) has the old behaviour.
    #[command(alias = "old")]
    Good { revs: Vec<String> },
    /// The commit (default HEAD) has the new behaviour.
    #[command(alias = "new")]
    Bad { rev: Option<String> },
    /// The commit (default HEAD) cannot be tested: another is chosen.
    Skip { revs: Vec<String> },
    /// End the bisection: back where it started (or at REV).
    Reset { rev: Option<String> },
    /// What was said so far, as commands and comments.
    Log,
    /// Run a command at each step: exit 0 good, 125 skip, 1-127 bad, else stop.
    Run {
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
}

pub fn bisect(a: BisectArgs) -> Result<u8> {
    let repo = open_worktree()?;
    let bisect = Bisect::new(&repo);
    let p = Bar::new("checking out");
    match a.command {
        BisectCommand::Start { revs } => {
            let ids: Vec<ObjectId> = revs
                .iter()
                .map(|r| repo.resolve(r))
                .collect::<Result<_, _>>()?;
            let words: Vec<String> = revs.iter().map(|r| format!("'{r}'")).collect();
            let step = bisect.start(
                ids.first().copied(),
                ids.get(1..).unwrap_or(&[]),
                &words.join(" "),
                &p,
            )?;
            p.finish();
            report(&repo, &step)
        }
        BisectCommand::Good { revs } => mark_each(&repo, Verdict::Good, &revs, &p),
        BisectCommand::Skip { revs } => mark_each(&repo, Verdict::Skip, &revs, &p),
        BisectCommand::Bad { rev } => mark_each(&repo, Verdict::Bad, rev.as_slice(), &p),
        BisectCommand::Reset { rev } => {
            let to = match rev {
                Some(r) => Some(match repo.full_ref(&r)? {
                    Some(full) if full.starts_with(dmv_repo::ref_names::BRANCHES) => {
                        Head::Branch(full)
                    }
                    _ => Head::Detached(repo.resolve(&r)?),
                }),
                None => None,
            };
            if !bisect.reset(to, &p)? {
                println!("We are not bisecting.");
            }
            Ok(0)
        }
        BisectCommand::Log => {
            let Some(state) = bisect.state()? else {
                bail!("we are not bisecting");
            };
            for line in state.log {
                println!("{line}");
            }
            Ok(0)
        }
        BisectCommand::Run { command } => run(&repo, &command, &p),
    }
}

/// `good`/`skip` of several commits (the last one's step is the one that
/// counts), `bad` of one; HEAD when none is named.
fn mark_each(repo: &Repository, verdict: Verdict, revs: &[String], p: &Bar) -> Result<u8> {
    let bisect = Bisect::new(repo);
    let ids: Vec<Option<ObjectId>> = match revs.is_empty() {
        true => vec![None],
        false => revs
            .iter()
            .map(|r| repo.resolve(r).map(Some))
            .collect::<Result<_, _>>()?,
    };
    let mut step = None;
    for id in ids {
        step = Some(bisect.mark(verdict, id, p)?);
    }
    p.finish();
    match step {
        Some(step) => report(repo, &step),
        None => Ok(0),
    }
}

/// Git's words for a step; in a partial replica the data of the commit
/// checked out is fetched (only its versions this replica lacks).
fn report(repo: &Repository, step: &BisectStep) -> Result<u8> {
    match step {
        BisectStep::Waiting { bad, good } => {
            println!("{}", dmv_repo::waiting_status(*bad, *good));
            Ok(0)
        }
        BisectStep::Testing {
            commit,
            left,
            steps,
        } => {
            let plural = |n: usize, one: &'static str, many: &'static str| match n {
                1 => one,
                _ => many,
            };
            println!(
                "Bisecting: {left} {} left to test after this (roughly {steps} {})",
                plural(*left, "revision", "revisions"),
                plural(*steps, "step", "steps")
            );
            println!("[{}] {}", commit.to_hex(), subject(repo, commit)?);
            fetch_checked_out(repo)?;
            Ok(0)
        }
        BisectStep::Found(id) => {
            println!("{} is the first bad commit", id.to_hex());
            let c = repo.commit(id)?;
            println!("commit {}", id.to_hex());
            println!("Author: {} <{}>", c.author.name, c.author.email);
            println!("Date:   {}", dmv_repo::utc_time(c.author.time));
            println!();
            for line in c.message.trim_end().lines() {
                println!("    {line}");
            }
            println!();
            let parent = c.parents.first().map(|p| repo.commit(p)).transpose()?;
            let changes =
                dmv_repo::diff_trees(&repo.store, parent.as_ref().map(|p| &p.tree), Some(&c.tree))?;
            crate::inspect::print_stat(&mut std::io::stdout().lock(), repo, &changes, false)?;
            Ok(0)
        }
        BisectStep::OnlySkipped(ids) => {
            println!("There are only 'skip'ped commits left to test.");
            println!("The first bad commit could be any of:");
            for id in ids {
                println!("{}", id.to_hex());
            }
            println!("We cannot bisect more!");
            Ok(2)
        }
    }
}

fn subject(repo: &Repository, id: &ObjectId) -> Result<String> {
    Ok(repo
        .commit(id)?
        .message
        .lines()
        .next()
        .unwrap_or("")
        .to_string())
}

/// In a partial replica, the data of the files of the commit just checked
/// out that is not here: fetched and written, so the commit can be tested.
fn fetch_checked_out(repo: &Repository) -> Result<()> {
    if !repo.is_partial() {
        return Ok(());
    }
    let got = dmv_sync::get(
        repo,
        &dmv_sync::GetOptions {
            paths: Vec::new(),
            rev: None,
            remote: None,
        },
        &Bar::new("fetching"),
    )?;
    if got.fetched > 0 {
        eprintln!(
            "fetched the data of {} to test it",
            crate::partial::counted(got.fetched, "file version", "file versions")
        );
    }
    Ok(())
}

/// `bisect run CMD…`: as git's, through the shell, until the first bad
/// commit is found (exit 0) or the bisection cannot go on.
fn run(repo: &Repository, command: &[String], p: &Bar) -> Result<u8> {
    let bisect = Bisect::new(repo);
    let Some(state) = bisect.state()? else {
        bail!("we are not bisecting: `dmv bisect start BAD GOOD` first");
    };
    if state.bad.is_none() || state.good.is_empty() {
        bail!("bisect run needs a bad and a good commit first");
    }
    let quoted: Vec<String> = command
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect();
    let line = quoted.join(" ");
    loop {
        println!("running  {line}");
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .current_dir(&repo.root)
            .status()
            .map_err(|e| anyhow::anyhow!("bisect run failed: cannot run {line}: {e}"))?;
        let verdict = match status.code() {
            Some(0) => Verdict::Good,
            Some(125) => Verdict::Skip,
            Some(c) if (1..128).contains(&c) => Verdict::Bad,
            code => bail!(
                "bisect run failed: exit code {} from {line} is < 0 or >= 128",
                code.map_or("(a signal)".to_string(), |c| c.to_string())
            ),
        };
        let step = bisect.mark(verdict, None, p)?;
        p.finish();
        let code = report(repo, &step)?;
        match step {
            BisectStep::Testing { .. } => continue,
            BisectStep::Found(_) => {
                println!("bisect found first bad commit");
                return Ok(0);
            }
            BisectStep::OnlySkipped(_) => {
                println!("bisect run cannot continue any more");
                return Ok(code);
            }
            BisectStep::Waiting { .. } => bail!("bisect run failed: no bad and good commits"),
        }
    }
}
