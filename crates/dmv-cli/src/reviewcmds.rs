//! `dmv comment` and `dmv review`: comments pinned to a version of a file,
//! and reviews of a branch; the rules are dmv-review's, the log travels
//! with `push`, `fetch` and `sync`.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use dmv_repo::{FastForward, Head, MergeOutcome, Repository};
use dmv_review::{Anchor, Board, Comment, Review, ReviewState, DEFAULT_MAX_EVENTS};

use crate::progress::Bar;
use crate::repo_args::{open_repo, open_worktree, repo_paths, show_path};

#[derive(Args)]
pub struct CommentArgs {
    #[command(subcommand)]
    command: CommentCommand,
}

#[derive(Subcommand)]
enum CommentCommand {
    /// Comment on a version of a file, at a region, a time or lines of it.
    Add {
        /// The file.
        path: std::path::PathBuf,
        /// The commit whose version of the file is meant.
        #[arg(long, default_value = "HEAD")]
        rev: String,
        /// A point X,Y or a rectangle X,Y,W,H of a picture, in its pixels.
        #[arg(long, value_name = "X,Y[,W,H]", group = "anchor")]
        at: Option<String>,
        /// A moment T or a stretch T0-T1 of a film or a sound (seconds, or H:M:S).
        #[arg(long, value_name = "T[-T]", group = "anchor")]
        time: Option<String>,
        /// A line A or lines A-B of a text.
        #[arg(long, value_name = "A[-B]", group = "anchor")]
        lines: Option<String>,
        /// What it says.
        #[arg(short, long)]
        message: String,
    },
    /// Answer a comment.
    Reply {
        /// The comment's id (or the start of it).
        id: String,
        /// What it says.
        #[arg(short, long)]
        message: String,
    },
    /// Mark a comment resolved.
    Resolve {
        /// The comment's id (or the start of it).
        id: String,
    },
    /// Open a resolved comment again.
    Reopen {
        /// The comment's id (or the start of it).
        id: String,
    },
    /// List the comments on the files of a commit's history (carried
    /// forward to later versions), or on one file.
    List {
        /// Only the comments on this file.
        path: Option<std::path::PathBuf>,
        /// The commit whose history is meant.
        #[arg(long, default_value = "HEAD")]
        rev: String,
        /// Also the resolved ones.
        #[arg(long)]
        all: bool,
        /// Only those whose thread mentions this name (`@NAME`).
        #[arg(long, value_name = "NAME")]
        mentioning: Option<String>,
        /// Only those this name wrote.
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct ReviewArgs {
    #[command(subcommand)]
    command: ReviewCommand,
}

#[derive(Subcommand)]
enum ReviewCommand {
    /// Propose a branch for another, to be approved before it lands.
    Create {
        /// The branch proposed.
        branch: String,
        /// The branch it is to land on (default: the branch checked out).
        #[arg(long)]
        into: Option<String>,
        /// What it is.
        #[arg(short, long, default_value = "")]
        message: String,
        /// Who is asked to approve it (again for several).
        #[arg(long = "reviewer", value_name = "NAME")]
        reviewers: Vec<String>,
    },
    /// List the open reviews.
    List {
        /// Also those landed or closed.
        #[arg(long)]
        all: bool,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a review: its branch, approvals and comments.
    Show {
        /// The review's id (or the start of it).
        id: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a review at its branch's commit now.
    Approve {
        /// The review's id (or the start of it).
        id: String,
    },
    /// Merge an approved review's branch into the branch checked out (its target).
    Land {
        /// The review's id (or the start of it).
        id: String,
        /// Approvals of the branch's commit now it needs.
        #[arg(long, default_value_t = 1)]
        approvals: usize,
    },
    /// Close a review without landing it.
    Close {
        /// The review's id (or the start of it).
        id: String,
    },
}

fn board(repo: &Repository) -> Result<Board> {
    let board = Board::read(repo, DEFAULT_MAX_EVENTS)?;
    for (id, why) in &board.unreadable {
        eprintln!("warning: review log entry {} skipped: {why}", id.short());
    }
    Ok(board)
}

fn date(time: i64) -> String {
    dmv_repo::utc_time(time)
}

pub fn comment(a: CommentArgs) -> Result<u8> {
    let repo = open_repo()?;
    match a.command {
        CommentCommand::Add {
            path,
            rev,
            at,
            time,
            lines,
            message,
        } => {
            let anchor = match (at, time, lines) {
                (Some(at), _, _) => Anchor::parse_region(&at)?,
                (_, Some(t), _) => Anchor::parse_time(&t)?,
                (_, _, Some(l)) => Anchor::parse_lines(&l)?,
                _ => Anchor::File,
            };
            let commit = repo.resolve(&rev)?;
            let rel = repo_paths(&repo, &[path])?.remove(0);
            let file = dmv_review::pin(&repo, commit, &String::from_utf8_lossy(&rel))?;
            let shown = format!("{} {}", show_path(file.path.as_bytes()), anchor.describe());
            let id = dmv_review::comment(&repo, file, anchor, &message)?;
            println!("commented {} on {shown}", id.short());
        }
        CommentCommand::Reply { id, message } => {
            let to = board(&repo)?;
            let reply = dmv_review::reply(&repo, &to, &id, &message)?;
            println!(
                "replied {} to {}",
                reply.short(),
                to.comment(&id)?.id.short()
            );
        }
        CommentCommand::Resolve { id } => {
            let id = dmv_review::resolve(&repo, &board(&repo)?, &id, true)?;
            println!("resolved {}", id.short());
        }
        CommentCommand::Reopen { id } => {
            let id = dmv_review::resolve(&repo, &board(&repo)?, &id, false)?;
            println!("reopened {}", id.short());
        }
        CommentCommand::List {
            path,
            rev,
            all,
            mentioning,
            by,
            json,
        } => {
            let at = repo.resolve(&rev)?;
            let board = board(&repo)?;
            let path = match path {
                Some(p) => Some(String::from_utf8_lossy(&repo_paths(&repo, &[p])?[0]).into_owned()),
                None => None,
            };
            let paths: Vec<&str> = path.as_deref().into_iter().collect();
            let filter = dmv_review::CommentFilter {
                paths: path.is_some().then_some(&paths[..]),
                mentioning: mentioning.as_deref(),
                by: by.as_deref(),
                made_at: None,
                resolved_too: all,
            };
            let shown =
                dmv_review::comments_carried_to(&repo, &board, at, &filter, &Default::default())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&shown)?);
            } else {
                for s in &shown {
                    print_comment(s.comment, s.on_this_version);
                }
            }
        }
    }
    Ok(0)
}

fn print_comment(c: &Comment, on_this_version: bool) {
    let mut marks = Vec::new();
    if c.resolved {
        marks.push("resolved");
    }
    if !on_this_version {
        marks.push("on an earlier version");
    }
    let marks = if marks.is_empty() {
        String::new()
    } else {
        format!(" [{}]", marks.join(", "))
    };
    println!(
        "{} {} {} — {}, {}{marks}",
        c.id.short(),
        show_path(c.file.path.as_bytes()),
        c.at.describe(),
        show_path(c.by.name.as_bytes()),
        date(c.by.time)
    );
    for line in c.text.lines() {
        println!("    {}", show_path(line.as_bytes()));
    }
    for r in &c.replies {
        println!(
            "    ↳ {} ({}): {}",
            show_path(r.by.name.as_bytes()),
            r.id.short(),
            show_path(r.text.replace('\n', " ").as_bytes())
        );
    }
}

fn state_word(r: &Review) -> String {
    match r.state {
        ReviewState::Open => "open".into(),
        ReviewState::Landed(at) => format!("landed at {}", at.short()),
        ReviewState::Closed => "closed".into(),
    }
}

pub fn review(a: ReviewArgs) -> Result<u8> {
    let repo = open_repo()?;
    match a.command {
        ReviewCommand::Create {
            branch,
            into,
            message,
            reviewers,
        } => {
            let into = match into {
                Some(i) => i,
                None => match repo.head()? {
                    Head::Branch(b) => dmv_repo::RefName::parse(&b).short(),
                    Head::Detached(_) => {
                        bail!("HEAD is detached: name the branch to land on with --into")
                    }
                },
            };
            let id = dmv_review::open_review(
                &repo,
                &board(&repo)?,
                &branch,
                &into,
                &message,
                &reviewers,
            )?;
            println!("review {} proposes {branch} for {into}", id.short());
        }
        ReviewCommand::List { all, json } => {
            let board = board(&repo)?;
            let reviews: Vec<&Review> = board
                .reviews
                .iter()
                .filter(|r| all || r.state == ReviewState::Open)
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&reviews)?);
            } else {
                for r in reviews {
                    println!(
                        "{} {} -> {} ({}, {} approval(s)) {}",
                        r.id.short(),
                        r.branch,
                        r.into,
                        state_word(r),
                        r.approvals.len(),
                        show_path(r.title.as_bytes())
                    );
                }
            }
        }
        ReviewCommand::Show { id, json } => {
            let board = board(&repo)?;
            let r = board.review(&id)?;
            let tip = dmv_review::review_tip(&repo, r).ok();
            if json {
                println!("{}", serde_json::to_string_pretty(r)?);
                return Ok(0);
            }
            println!(
                "review {}: {} -> {} ({})",
                r.id.to_hex(),
                r.branch,
                r.into,
                state_word(r)
            );
            println!(
                "opened by {}, {}",
                show_path(r.by.name.as_bytes()),
                date(r.by.time)
            );
            if !r.title.is_empty() {
                println!("\n    {}\n", show_path(r.title.as_bytes()));
            }
            if !r.reviewers.is_empty() {
                println!("reviewers: {}", r.reviewers.join(", "));
            }
            if let Some(tip) = tip {
                print_commits(&repo, r, tip)?;
            }
            for a in &r.approvals {
                let holds = if Some(a.commit) == tip {
                    ""
                } else {
                    " (the branch moved since)"
                };
                println!(
                    "approved by {} at {}{holds}",
                    show_path(a.by.name.as_bytes()),
                    a.commit.short()
                );
            }
            if let Some(tip) = tip {
                let mut shown = Vec::new();
                let mut paths: Vec<&String> = board.comments.iter().map(|c| &c.file.path).collect();
                paths.sort();
                paths.dedup();
                for p in paths {
                    shown.extend(dmv_review::comments_on(&repo, &board, p, tip)?);
                }
                for s in shown.iter().filter(|s| !s.comment.resolved) {
                    print_comment(s.comment, s.on_this_version);
                }
            }
        }
        ReviewCommand::Approve { id } => {
            let board = board(&repo)?;
            let commit = dmv_review::approve(&repo, &board, &id)?;
            println!(
                "approved {} at {}",
                board.review(&id)?.id.short(),
                commit.short()
            );
        }
        ReviewCommand::Land { id, approvals } => {
            let repo = open_worktree_of(repo)?;
            let board = board(&repo)?;
            let (r, tip) = dmv_review::ready_to_land(&repo, &board, &id, approvals)?;
            match repo.head()? {
                Head::Branch(b) if dmv_repo::RefName::parse(&b).short() == r.into => {}
                _ => bail!(
                    "review {} lands on {}: check it out first",
                    r.id.short(),
                    r.into
                ),
            }
            let message = format!("Merge review {} of branch '{}'", r.id.short(), r.branch);
            let p = Bar::new("merging");
            let outcome = dmv_sync::merge(
                &repo,
                tip,
                &r.branch,
                FastForward::Allow,
                Some(&message),
                &p,
            )?;
            let landed = match outcome {
                MergeOutcome::UpToDate => repo.head_commit()?,
                MergeOutcome::FastForward(at) | MergeOutcome::Merged(at) => Some(at),
                MergeOutcome::Conflicts(paths) => {
                    // A hub that protects the branch takes only a clean merge.
                    eprintln!(
                        "the merge of {} conflicts in {} path(s): resolve them and commit (if the hub protects {}, merge {} into {} instead, push it for approval, and land again)",
                        r.branch,
                        paths.len(),
                        r.into,
                        r.into,
                        r.branch
                    );
                    return Ok(1);
                }
            };
            let at = landed.ok_or_else(|| anyhow::anyhow!("{} has no commit", r.into))?;
            dmv_review::close(&repo, &board, &id, Some(at))?;
            println!(
                "landed review {} on {} at {}",
                r.id.short(),
                r.into,
                at.short()
            );
        }
        ReviewCommand::Close { id } => {
            let id = dmv_review::close(&repo, &board(&repo)?, &id, None)?;
            println!("closed review {}", id.short());
        }
    }
    Ok(0)
}

/// Commits the review's branch shows on a review page, at most.
const COMMITS_SHOWN: usize = 50;

/// The review's commits (its branch's, not its target's), newest first, as `log --oneline`.
fn print_commits(repo: &Repository, r: &Review, tip: dmv_repo::store::ObjectId) -> Result<()> {
    let into = repo.refs.get(&dmv_repo::ref_names::branch_ref(&r.into))?;
    let haves: Vec<_> = into.into_iter().collect();
    let mut commits = Vec::new();
    for id in repo.history().commits_between(&[tip], &haves)? {
        let c = repo.commit(&id)?;
        commits.push((c.committer.time, id, dmv_repo::subject_of(&c.message)));
    }
    commits.sort_by(|a, b| b.cmp(a));
    println!("{} commit(s):", commits.len());
    for (_, id, subject) in commits.iter().take(COMMITS_SHOWN) {
        println!("  {} {}", id.short(), show_path(subject.as_bytes()));
    }
    if commits.len() > COMMITS_SHOWN {
        println!("  … and {} more", commits.len() - COMMITS_SHOWN);
    }
    Ok(())
}

/// The same repository, refused if it has no working tree (landing merges there).
fn open_worktree_of(repo: Repository) -> Result<Repository> {
    drop(repo);
    open_worktree()
}
