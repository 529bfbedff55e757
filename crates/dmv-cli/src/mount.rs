//! `dmv mount` and `dmv umount`: a thin front over dmv-mount. The mount
//! runs in this process until the folder is unmounted, or in a process of
//! its own with `--background`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use dmv_mount::View;

use crate::repo_args::{open_repo, printable, spawn_detached};

#[derive(Args)]
pub struct MountArgs {
    /// The revision to show: a branch, a tag or a commit (default HEAD).
    /// Given alone, the argument is the folder.
    #[arg(value_name = "REV", required_unless_present = "status")]
    rev: Option<String>,
    /// The folder to show it in (it must exist, and is best empty).
    #[arg(value_name = "DIR")]
    folder: Option<PathBuf>,
    /// Show every branch, tag and commit: branches/NAME, tags/NAME and
    /// commits/TIME-ID, each the folder of that commit.
    #[arg(long)]
    all: bool,
    /// Show this replica's working tree instead, writable: every tracked
    /// file listed at its real size whether or not its data is here (read
    /// chunk by chunk as needed, and kept), changes written into the
    /// working tree itself, so `dmv status` and `dmv commit` see them.
    /// Given alone, the argument is the folder (outside the working tree).
    #[arg(long, conflicts_with = "all")]
    worktree: bool,
    /// Say which mounts of this replica run: their folders, what they
    /// fetched so far, and the files whose data is being read now.
    #[arg(long, conflicts_with_all = ["all", "worktree", "background", "rev"])]
    status: bool,
    /// With --status: as JSON.
    #[arg(long, requires = "status")]
    json: bool,
    /// Mount in a process of its own and return once the folder shows the
    /// revision (its messages in .dmv/mount.log).
    #[arg(long)]
    background: bool,
}

#[derive(Args)]
pub struct UmountArgs {
    /// The folder a `dmv mount` shows a revision in. Returns once the
    /// mount's process has ended (it stores what it was fetching, and
    /// tells the replicas it fetched from), or says it is still ending
    /// after a minute.
    #[arg(value_name = "DIR")]
    folder: PathBuf,
}

const LOG: &str = "mount.log";

pub fn mount(a: MountArgs) -> Result<u8> {
    if a.status {
        return status(a.json);
    }
    let given = a.rev.unwrap_or_default();
    let (rev, dir) = match (a.folder, a.all || a.worktree) {
        (Some(_), true) if a.worktree => {
            bail!("--worktree shows the working tree: give only the folder")
        }
        (Some(_), true) => bail!("--all shows every revision: give only the folder"),
        (Some(dir), false) => (given, dir),
        (None, _) => ("HEAD".to_string(), PathBuf::from(given)),
    };
    let repo = open_repo()?;
    let view = match (a.all, a.worktree) {
        (true, _) => Some(View::Everything),
        (_, true) => {
            repo.require_worktree()?;
            None
        }
        _ => Some(View::Commit(repo.resolve(&rev)?)),
    };
    let dir = std::fs::canonicalize(&dir)
        .with_context(|| format!("cannot mount at {}", dir.display()))?;
    if dmv_mount::is_mount_point(&dir) {
        bail!(
            "{} is already a mount point (`dmv umount {}` unmounts it)",
            dir.display(),
            dir.display()
        );
    }
    let shown = if a.all {
        "every branch, tag and commit".to_string()
    } else if a.worktree {
        format!("the working tree of {}", repo.root.display())
    } else {
        rev.clone()
    };
    if a.background {
        let log_path = repo.dmv.join(LOG);
        let mut args = vec!["mount".into()];
        args.extend(if a.all {
            vec!["--all".into()]
        } else if a.worktree {
            vec!["--worktree".into()]
        } else {
            vec![rev.clone().into()]
        });
        args.push(dir.clone().into_os_string());
        let mut child = spawn_detached(&args, &std::env::current_dir()?, &log_path)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !dmv_mount::is_mount_point(&dir) {
            if let Some(exit) = child.try_wait()? {
                bail!(
                    "the mount ended at once ({exit}); its log: {}",
                    log_path.display()
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "the mount did not appear within 30 s; its log: {}",
                    log_path.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        println!(
            "mounted {shown} at {} (pid {}); `dmv umount {}` unmounts it",
            dir.display(),
            child.id(),
            dir.display()
        );
        return Ok(0);
    }
    let stop = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    let signals = [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ];
    #[cfg(not(unix))]
    let signals = [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT];
    for signal in signals {
        signal_hook::flag::register(signal, stop.clone())?;
    }
    let said_dir = dir.display().to_string();
    let report = Box::new(|line: &str| eprintln!("dmv: {}", printable(line)));
    let said = || {
        eprintln!("mounted {shown} at {said_dir}; `dmv umount {said_dir}` or Ctrl-C unmounts it")
    };
    let served = match view {
        Some(view) => dmv_mount::serve(repo, view, &dir, &stop, said, report)?,
        None => {
            // DMV_MOUNT_PASSTHROUGH=0: this process reads and writes every
            // file, as on a kernel without FUSE passthrough.
            let passthrough = std::env::var_os("DMV_MOUNT_PASSTHROUGH").is_none_or(|v| v != "0");
            dmv_mount::serve_worktree(repo, &dir, passthrough, &stop, said, report)?
        }
    };
    match served.fetched {
        0 => eprintln!("unmounted {said_dir}"),
        n => eprintln!("unmounted {said_dir} ({n} bytes fetched from other replicas, kept here)"),
    }
    Ok(0)
}

/// `dmv mount --status`: each running mount of this replica, from what it
/// writes once a second.
fn status(json: bool) -> Result<u8> {
    let repo = open_repo()?;
    // A mount whose folder is gone is ending: it no longer shows anything.
    let mounts: Vec<_> = dmv_mount::running_mounts(&repo.dmv)
        .into_iter()
        .filter(|m| dmv_mount::is_mount_point(&m.dir))
        .collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&mounts)?);
        return Ok(0);
    }
    if mounts.is_empty() {
        println!("no mount of this replica runs");
    }
    for m in &mounts {
        let shows = match m.shows.as_str() {
            "worktree" => "the working tree".to_string(),
            "everything" => "every branch, tag and commit".to_string(),
            commit => format!("commit {}", &commit[..commit.len().min(12)]),
        };
        println!(
            "{} shows {shows} (pid {}): {} fetched from other replicas{}",
            printable(&m.dir.display().to_string()),
            m.pid,
            dmv_repo::human_bytes(m.fetched_bytes),
            if m.shows == "worktree" && !m.passthrough {
                "; reads and writes go through the mount"
            } else {
                ""
            }
        );
        for (path, size) in &m.reading {
            println!(
                "  reading {} ({})",
                printable(path),
                dmv_repo::human_bytes(*size)
            );
        }
        if m.more_reading > 0 {
            println!("  and {} more files being read", m.more_reading);
        }
    }
    Ok(0)
}

pub fn umount(a: UmountArgs) -> Result<u8> {
    let dir = std::fs::canonicalize(&a.folder)
        .with_context(|| format!("cannot unmount {}", a.folder.display()))?;
    if !dmv_mount::is_mount_point(&dir) {
        bail!("{} is not a mount point", dir.display());
    }
    let here = open_repo().ok().map(|r| r.root.clone());
    let process = dmv_mount::mount_process(&dir, here.as_deref());
    dmv_mount::unmount(&dir)?;
    // The mount stores what it was fetching and tells the replicas it
    // fetched from as it ends: a command after this one (a second mount
    // there, moving the replica) finds it ended.
    if let Some(pid) = process {
        if !dmv_mount::wait_ended(pid, UMOUNT_WAITS) {
            eprintln!(
                "dmv: unmounted {}; its process {pid} is still ending (it stores what it fetched)",
                dir.display()
            );
        }
    }
    Ok(0)
}

/// How long `dmv umount` waits for the mount's process to end.
const UMOUNT_WAITS: Duration = Duration::from_secs(60);
