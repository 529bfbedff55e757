//! `dmv merge` and `dmv resolve`.

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::{ArgGroup, Args};
use dmv_repo::{ConflictedPath, MergeOutcome, Resolution, Squashed};

use crate::progress::{Bar, Quiet};
use crate::repo_args::{open_worktree, repo_paths, show_path};

#[derive(Args)]
#[command(
    after_help = "A text file changed on both sides is merged line by line; lines both sides changed \
are left between conflict markers (`merge.conflictStyle`: merge or diff3): edit the file, then `dmv add` it. \
Other files (media) are not merged inside: settle each with `dmv resolve --ours|--theirs|--both PATH`. Then `dmv commit`.\n\
Exit status: 0 merged (or nothing to do), 1 conflicts, 128 error."
)]
pub struct MergeArgs {
    /// The branch or commit to merge into the current branch.
    #[arg(required_unless_present = "abort")]
    rev: Option<String>,
    /// Give up the merge in progress: put the working tree and staging area back to HEAD.
    #[arg(long, conflicts_with = "rev")]
    abort: bool,
    /// Make a merge commit even when the branch could simply move forward.
    #[arg(long = "no-ff", conflicts_with = "ff_only")]
    no_ff: bool,
    /// Only move the branch forward: refuse when a merge commit would be needed.
    #[arg(long = "ff-only")]
    ff_only: bool,
    /// The merge commit's message (default: git's "Merge branch 'NAME'").
    #[arg(short, long, conflicts_with = "abort")]
    message: Vec<String>,
    /// Stage the merged result without committing it or moving HEAD; the
    /// next `dmv commit` records it as one ordinary commit ("Squashed
    /// commit of the following:" and the commits, from .dmv/SQUASH_MSG).
    #[arg(long, conflicts_with_all = ["abort", "no_ff", "message"])]
    squash: bool,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn merge(a: MergeArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_worktree()?;
    if a.abort {
        repo.merges().merge_abort()?;
        if !quiet {
            match repo.head_commit()? {
                Some(id) => println!("Merge aborted; back at {}.", id.short()),
                None => println!("Merge aborted."),
            }
        }
        return Ok(0);
    }
    let rev = a
        .rev
        .ok_or_else(|| anyhow!("usage: dmv merge REV or dmv merge --abort"))?;
    let theirs = repo.resolve(&rev)?;
    let p = Bar::new("merging");
    if a.squash {
        return squash(&repo, theirs, &rev, quiet, &p);
    }
    let ff = match (a.no_ff, a.ff_only) {
        (true, _) => dmv_repo::FastForward::Never,
        (_, true) => dmv_repo::FastForward::Only,
        _ => dmv_repo::FastForward::Allow,
    };
    let message = (!a.message.is_empty()).then(|| a.message.join("\n\n"));
    let before = repo.head_commit()?;
    let outcome = dmv_sync::merge(&repo, theirs, &rev, ff, message.as_deref(), &p)?;
    p.finish();
    // Quiet, as pull's: conflicts still need saying, they leave work to do.
    if quiet && !matches!(outcome, MergeOutcome::Conflicts(_)) {
        return Ok(0);
    }
    let code = report(&repo, &outcome, &rev)?;
    // As git's: what the merge brought, as a diffstat.
    if let (MergeOutcome::FastForward(after) | MergeOutcome::Merged(after), Some(before)) =
        (&outcome, before)
    {
        let tree = |id: &dmv_repo::store::ObjectId| repo.commit(id).map(|c| c.tree);
        let changes =
            dmv_repo::diff_trees(&repo.store, Some(&tree(&before)?), Some(&tree(after)?))?;
        crate::inspect::print_stat(&mut std::io::stdout().lock(), &repo, &changes, false)?;
    }
    Ok(code)
}

/// `merge --squash`, said as git says it.
fn squash(
    repo: &dmv_repo::Repository,
    theirs: dmv_repo::store::ObjectId,
    rev: &str,
    quiet: bool,
    p: &Bar,
) -> Result<u8> {
    let head = repo.head_commit()?;
    let fast_forward = match head {
        Some(h) => repo.history().is_ancestor(&h, &theirs)?,
        None => false,
    };
    let outcome = dmv_sync::merge_squash(repo, theirs, rev, p)?;
    p.finish();
    match (outcome, head) {
        (Squashed::UpToDate, _) => {
            if !quiet {
                println!("Already up to date.");
            }
            Ok(0)
        }
        (Squashed::Staged, Some(head)) if !quiet => {
            if fast_forward {
                println!("Updating {}..{}", head.short(), theirs.short());
                println!("Fast-forward");
            }
            println!("Squash commit -- not updating HEAD");
            if fast_forward {
                let tree = |id: &dmv_repo::store::ObjectId| repo.commit(id).map(|c| c.tree);
                let changes =
                    dmv_repo::diff_trees(&repo.store, Some(&tree(&head)?), Some(&tree(&theirs)?))?;
                crate::inspect::print_stat(&mut std::io::stdout().lock(), repo, &changes, false)?;
            } else {
                eprintln!("Automatic merge went well; stopped before committing as requested");
            }
            Ok(0)
        }
        (Squashed::Staged, _) => Ok(0),
        (Squashed::Conflicts(paths), _) => {
            println!("Squash commit -- not updating HEAD");
            report_conflicts(repo, &paths, "fix conflicts and then commit the result")?;
            Ok(1)
        }
    }
}

/// Says what a merge did (exit 1 on conflicts); `pull` and `sync` end here too.
pub fn report(repo: &dmv_repo::Repository, outcome: &MergeOutcome, label: &str) -> Result<u8> {
    match outcome {
        MergeOutcome::UpToDate => println!("Already up to date."),
        MergeOutcome::FastForward(id) => println!("Fast-forward to {}", id.short()),
        MergeOutcome::Merged(id) => println!("Merged {label}: {}", id.short()),
        MergeOutcome::Conflicts(paths) => {
            let how = match (paths.iter().any(|c| c.marked), paths.iter().any(|c| !c.marked)) {
                (true, true) => "edit the files with conflict markers and `dmv add` them, settle the others with `dmv resolve --ours|--theirs|--both PATH`",
                (true, false) => "edit the files with conflict markers and `dmv add` them",
                _ => "settle each path with `dmv resolve --ours|--theirs|--both PATH`",
            };
            let abort = match repo.merges().merge_state()?.map(|s| s.kind) {
                Some(dmv_repo::MergeKind::CherryPick) => "dmv cherry-pick --abort",
                _ => "dmv merge --abort",
            };
            report_conflicts(
                repo,
                paths,
                &format!("{how}, then run `dmv commit` (or `{abort}`)"),
            )?;
            return Ok(1);
        }
    }
    Ok(0)
}

/// One line per conflicted path, as git words them, then what to do next.
pub fn report_conflicts(
    repo: &dmv_repo::Repository,
    paths: &[ConflictedPath],
    next: &str,
) -> Result<()> {
    let state = repo.merges().merge_state()?;
    let conflicts = state
        .as_ref()
        .map(|s| s.conflicts.as_slice())
        .unwrap_or_default();
    for c in paths {
        if c.marked {
            println!(
                "CONFLICT (content): Merge conflict in {}",
                show_path(&c.path)
            );
            continue;
        }
        let what = conflicts
            .iter()
            .find(|x| x.path == c.path)
            .map_or("conflict", |x| x.describe().1);
        println!("CONFLICT ({what}): {}", show_path(&c.path));
    }
    println!("Automatic merge failed: {next}.");
    Ok(())
}

#[derive(Args)]
#[command(
    after_help = "The picked commit's change (from its parent) is merged into HEAD as `dmv merge` merges: \
text files line by line, media per file. Without conflicts it is committed on HEAD alone with the picked commit's \
message and author. With conflicts, settle them as for a merge, then `dmv commit` (or `dmv cherry-pick --continue`).\n\
Exit status: 0 picked (or nothing to pick), 1 conflicts, 128 error."
)]
pub struct CherryPickArgs {
    /// The commit whose change to apply.
    #[arg(required_unless_present_any = ["abort", "continue_pick"], conflicts_with_all = ["abort", "continue_pick"])]
    rev: Option<String>,
    /// Give up the pick in progress: put the working tree and staging area back to HEAD.
    #[arg(long)]
    abort: bool,
    /// Commit the pick in progress once its conflicts are settled, with the picked commit's message.
    #[arg(long = "continue", conflicts_with = "abort")]
    continue_pick: bool,
    /// End the message with "(cherry picked from commit ID)", as git's -x.
    #[arg(short = 'x')]
    record_origin: bool,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn cherry_pick(a: CherryPickArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_worktree()?;
    if a.abort || a.continue_pick {
        let state = repo
            .merges()
            .merge_state()?
            .filter(|s| s.kind == dmv_repo::MergeKind::CherryPick)
            .ok_or_else(|| anyhow!("no cherry-pick in progress"))?;
        if a.abort {
            repo.merges().merge_abort()?;
            if !quiet {
                println!("Cherry-pick aborted.");
            }
            return Ok(0);
        }
        let id = repo
            .commit_staged(&repo.merges().default_message(&state)?)?
            .ok_or_else(|| anyhow!("nothing was committed"))?;
        if !quiet {
            println!(
                "Picked {}: {}",
                id.short(),
                repo.commit(&id)?.message.lines().next().unwrap_or("")
            );
        }
        return Ok(0);
    }
    let rev = a
        .rev
        .ok_or_else(|| anyhow!("usage: dmv cherry-pick REV | --abort | --continue"))?;
    let pick = repo.resolve(&rev)?;
    let p = Bar::new("picking");
    let outcome = dmv_sync::cherry_pick(&repo, pick, &rev, a.record_origin, &p)?;
    p.finish();
    match outcome {
        MergeOutcome::Merged(id) if !quiet => println!(
            "Picked {rev} as {}: {}",
            id.short(),
            repo.commit(&id)?.message.lines().next().unwrap_or("")
        ),
        MergeOutcome::UpToDate if !quiet => {
            println!("Nothing to pick: the change of {rev} is already here.")
        }
        MergeOutcome::Conflicts(_) => return report(&repo, &outcome, &rev),
        _ => {}
    }
    Ok(0)
}

#[derive(Args)]
#[command(group(ArgGroup::new("side").args(["ours", "theirs", "both"])))]
pub struct ResolveArgs {
    /// Take our version (the current branch's); if we deleted the file, delete it.
    #[arg(long)]
    ours: bool,
    /// Take their version (the merged branch's); if they deleted the file, delete it.
    #[arg(long)]
    theirs: bool,
    /// Keep both versions side by side as NAME.ours.EXT and NAME.theirs.EXT.
    #[arg(long)]
    both: bool,
    /// Conflicted files, or directories holding them. With none of --ours, --theirs,
    /// --both, each file is staged as it is now in the working tree (merged by hand).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn resolve(a: ResolveArgs) -> Result<u8> {
    let repo = open_worktree()?;
    let specs = repo_paths(&repo, &a.paths)?;
    let how = match (a.ours, a.theirs, a.both) {
        (true, _, _) => Resolution::Ours,
        (_, true, _) => Resolution::Theirs,
        (_, _, true) => Resolution::Both,
        _ => Resolution::AsIs,
    };
    for r in dmv_sync::resolve_conflicts(&repo, &specs, how, &crate::progress::Phases::default())? {
        let path = show_path(&r.path);
        match r.kept.as_slice() {
            [] => println!("Resolved {path} (deleted)"),
            [one] if *one == r.path => println!("Resolved {path}"),
            kept => println!(
                "Resolved {path}: kept {}",
                kept.iter()
                    .map(|k| show_path(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    match repo.merges().merge_state()?.map(|s| s.conflicts.len()) {
        Some(0) => println!("All conflicts resolved; run `dmv commit` to conclude the merge."),
        Some(n) => println!("{n} conflicts left."),
        None => {}
    }
    Ok(0)
}
