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
