//! `dmv lock`, `unlock` and `locks`: exclusive locks on paths, held on a
//! remote for the whole repository (every branch).

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::Args;
use dmv_repo::{utc_time, PathLock, Repository};

use crate::repo_args::{open_repo, printable, repo_paths};

#[derive(Args)]
pub struct LockArgs {
    /// Paths to lock (files of the repository; they need not exist yet).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The remote that keeps the locks (default: the branch's upstream remote, else origin, else the only one).
    #[arg(long)]
    remote: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct UnlockArgs {
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Break locks held by someone else (admins only).
    #[arg(long)]
    force: bool,
    #[arg(long)]
    remote: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct LocksArgs {
    /// Only the locks you hold.
    #[arg(long)]
    mine: bool,
    /// Only your locks of files you have not changed for DAYS days (default
    /// 7): the ones you may have forgotten to give back.
    #[arg(long, value_name = "DAYS", num_args = 0..=1, default_missing_value = "7")]
    stale: Option<u32>,
    #[arg(long)]
    remote: Option<String>,
    #[arg(long)]
    json: bool,
}

fn lock_paths(repo: &Repository, paths: &[PathBuf]) -> Result<Vec<String>> {
    repo_paths(repo, paths)?
        .into_iter()
        .map(|p| {
            String::from_utf8(p).map_err(|p| {
                anyhow!(
                    "cannot lock {}: the path is not UTF-8",
                    String::from_utf8_lossy(p.as_bytes())
                )
            })
        })
        .collect()
}

fn connect(repo: &Repository, remote: Option<&str>) -> Result<Box<dyn dmv_sync::Remote>> {
    Ok(dmv_sync::lock_remote(repo, remote)?.connect()?)
}

#[derive(serde::Serialize)]
struct ShownLock<'a> {
    path: &'a str,
    owner: &'a str,
    replica: &'a str,
    since: u64,
    mine: bool,
}

fn print(locks: &[PathLock], you: Option<&str>, json: bool, verb: Option<&str>) -> Result<()> {
    if json {
        let shown: Vec<ShownLock> = locks
            .iter()
            .map(|l| ShownLock {
                path: &l.path,
                owner: &l.owner,
                replica: &l.replica,
                since: l.since,
                mine: Some(l.owner.as_str()) == you,
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&shown)?);
        return Ok(());
    }
    for l in locks {
        match verb {
            Some(verb) => println!("{verb} {}", printable(&l.path)),
            None => println!(
                "{}\t{}\t{}\tsince {}",
                printable(&l.path),
                printable(&l.owner),
                printable(&l.replica),
                utc_time(l.since as i64)
            ),
        }
    }
    Ok(())
}

pub fn lock(a: LockArgs) -> Result<u8> {
    let repo = open_repo()?;
    let paths = lock_paths(&repo, &a.paths)?;
    let taken = dmv_sync::lock(&repo, connect(&repo, a.remote.as_deref())?.as_mut(), &paths)?;
    print(&taken.locks, taken.you.as_deref(), a.json, Some("Locked"))?;
    Ok(0)
}

pub fn unlock(a: UnlockArgs) -> Result<u8> {
    let repo = open_repo()?;
    let paths = lock_paths(&repo, &a.paths)?;
    let released = dmv_sync::unlock(
        &repo,
        connect(&repo, a.remote.as_deref())?.as_mut(),
        &paths,
        a.force,
    )?;
    print(
        &released.locks,
        released.you.as_deref(),
        a.json,
        Some("Unlocked"),
    )?;
    Ok(0)
}

/// `dmv edit`: Perforce's `p4 edit` in one step, the locks taken and the
/// files made writable (what `lock` does; the name is the one studio
/// people know).
pub fn edit(a: LockArgs) -> Result<u8> {
    let repo = open_repo()?;
    let paths = lock_paths(&repo, &a.paths)?;
    let taken = dmv_sync::lock(&repo, connect(&repo, a.remote.as_deref())?.as_mut(), &paths)?;
    print(
        &taken.locks,
        taken.you.as_deref(),
        a.json,
        Some("Editing (locked)"),
    )?;
    Ok(0)
}

pub fn locks(a: LocksArgs) -> Result<u8> {
    let repo = open_repo()?;
    let listed = dmv_sync::list_locks(&repo, connect(&repo, a.remote.as_deref())?.as_mut())?;
    let stale = match a.stale {
        Some(days) => Some(dmv_sync::stale_locks(&repo, &listed, days)?),
        None => None,
    };
    let shown: Vec<PathLock> = listed
        .locks
        .into_iter()
        .filter(|l| !a.mine || Some(&l.owner) == listed.you.as_ref())
        .filter(|l| stale.as_ref().is_none_or(|s| s.contains(&l.path)))
        .collect();
    print(&shown, listed.you.as_deref(), a.json, None)?;
    Ok(0)
}

#[derive(Args)]
pub struct AuditArgs {
    /// Only events at or after DATE (`2026-11-28`, `3 days ago`, `@SECONDS`).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// One JSON object a line, as the log keeps them.
    #[arg(long)]
    json: bool,
    /// The audit log of a repository kept in a bucket (`s3://BUCKET/PREFIX`),
    /// which the servers in front of it keep there.
    #[arg(long, value_name = "URL")]
    from: Option<String>,
}

/// `dmv audit`: who pushed, locked, unlocked, broke a lock, uploaded and
/// dropped what and when, from the audit log of the repository here (a
/// hub's directory: the servers in front of it keep the log), or of one
/// kept in a bucket (`--from`).
pub fn audit(args: AuditArgs) -> Result<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let since = match &args.since {
        Some(text) => Some(
            dmv_repo::parse_date(text, now)
                .ok_or_else(|| anyhow!("--since {text:?} is not a date"))?,
        ),
        None => None,
    };
    let read = match &args.from {
        Some(url) => {
            let bucket =
                dmv_sync::BucketRemote::open(url, &dmv_sync::BucketOptions::default(), None)?;
            dmv_sync::read_bucket_audit(bucket.bucket(), since)?
        }
        None => dmv_repo::read_audit(&open_repo()?.dmv, since, dmv_repo::MAX_AUDIT_READ)?,
    };
    let mut out = std::io::stdout().lock();
    use std::io::Write;
    for event in &read.events {
        if args.json {
            out.write_all(&event.line())?;
            continue;
        }
        let mut what: Vec<String> = event
            .refs
            .iter()
            .map(|r| {
                let short = |id: &Option<String>| {
                    id.as_deref()
                        .map_or("(none)".to_string(), |h| h.chars().take(12).collect())
                };
                format!("{} {}→{}", r.name, short(&r.old), short(&r.new))
            })
            .collect();
        what.extend(event.paths.iter().cloned());
        if event.more_refs > 0 {
            what.push(format!("and {} more refs", event.more_refs));
        }
        if event.more_paths > 0 {
            what.push(format!("and {} more paths", event.more_paths));
        }
        what.extend(event.detail.iter().cloned());
        writeln!(
            out,
            "{}  {:<10} {:<16} {}",
            utc_time(event.time),
            printable(&event.event),
            printable(&event.user),
            printable(&what.join(", "))
        )?;
    }
    if read.unreadable > 0 {
        eprintln!(
            "warning: {} lines of the audit log are not events: passed over",
            read.unreadable
        );
    }
    if read.cut_short {
        eprintln!(
            "warning: only the newest {} MiB of the audit log were read: give --since for older events",
            dmv_repo::MAX_AUDIT_READ >> 20
        );
    }
    Ok(0)
}
