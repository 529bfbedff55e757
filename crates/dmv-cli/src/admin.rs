//! fsck, gc, stats.

use anyhow::{bail, Result};
use clap::Args;
use dmv_repo::store::GcOptions;
use dmv_repo::{human_bytes, GcPolicy, Repository};

use crate::progress::{Bar, Quiet};
use crate::repo_args::{open_repo, printable, show_path};

#[derive(Args)]
pub struct FsckArgs {
    /// Check every object in every pack, reachable or not, and every index.
    #[arg(long)]
    full: bool,
    /// Rewrite what is damaged from what is still whole, fetch what is damaged or missing from another replica, then check everything
    #[arg(long)]
    pub repair: bool,
    /// Ask this remote live which versions it holds and correct the location log before counting copies;
    /// with --repair: the remote to fetch from (default: each configured one, origin first)
    #[arg(long, value_name = "REMOTE")]
    from: Option<String>,
    #[arg(long)]
    json: bool,
}

pub fn fsck(a: FsckArgs) -> Result<u8> {
    let repo = open_repo()?;
    if a.repair {
        let done = dmv_sync::repair(&repo, a.from.as_deref())?;
        let s = &done.salvaged;
        if !a.json {
            eprintln!(
                "repair: {} damaged packs rewritten ({} whole objects kept), {} indexes rebuilt, {} files stored again from the working tree, {} objects fetched{}",
                s.packs_rewritten,
                s.objects_saved,
                s.indexes_rebuilt,
                done.restored_from_worktree,
                done.fetched,
                if done.from.is_empty() { String::new() } else { format!(" from {}", done.from.join(", ")) }
            );
            if done.dirstate_rebuilt {
                eprintln!("repair: the dirstate was damaged and is rebuilt from HEAD; the working tree is untouched, changes you had staged are not staged any more");
            }
            if done.locations_reset {
                eprintln!("repair: the location log was damaged (kept as .dmv/locations.damaged) and starts over; replicas are asked live and it fills again as you sync");
            }
            for r in &done.unreachable {
                eprintln!("repair: could not ask {r}");
            }
            for line in &done.lost {
                eprintln!("lost: {line}");
            }
        }
        // The check that follows runs on the repaired repository.
        let repo = open_repo()?;
        return check(
            &repo,
            &FsckArgs {
                full: true,
                repair: false,
                from: None,
                json: a.json,
            },
            Some(&done),
        );
    }
    if let Some(from) = &a.from {
        let checked = dmv_sync::check_copies(&repo, from)?;
        if !a.json {
            for path in &checked.not_there {
                println!(
                    "not on {from}: {} (the location log said it was; corrected)",
                    printable(path)
                );
            }
            eprintln!("asked {from} about {} file versions: {} the log wrongly had there, {} it did not know of", checked.versions, checked.not_there.len(), checked.newly_known);
        }
    }
    check(&repo, &a, None)
}

fn check(repo: &Repository, a: &FsckArgs, repaired: Option<&dmv_sync::Repaired>) -> Result<u8> {
    let p = Bar::new("checking");
    let found = repo.maintenance().fsck(a.full, &p)?;
    p.finish();
    let missing: Vec<String> = found
        .missing
        .iter()
        .map(|f| {
            let path = show_path(&f.path);
            format!("{path} is inside this replica's slice ({}) but its data is not here and was not dropped; `dmv get {path}` fetches it", repo.config.slice)
        })
        .collect();
    let what = |u: &dmv_repo::UnderCopied| match &u.path {
        Some(path) => format!("{} (version {})", printable(path), u.id.short()),
        None => format!("version {} of a file of older history", u.id.short()),
    };
    let lost: Vec<String> = found.lost().map(|u| format!("{}: its data is not here and no other replica is known to hold it (`dmv whereis` asks the remotes)", what(u))).collect();
    let report = &found.report;
    if a.json {
        let json = serde_json::json!({"report": report, "problems": found.problems, "missing": missing, "under_copied": found.under_copied, "lost": lost, "repair": repaired});
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        for u in found.under_copied.iter().filter(|u| u.known_copies > 0) {
            println!(
                "note: {}: {} other copies known, drop.numcopies is {}",
                what(u),
                u.known_copies,
                u.numcopies
            );
        }
        for line in &found.problems {
            println!("damaged: {line}");
        }
        for line in &missing {
            println!("missing: {line}");
        }
        for line in &lost {
            println!("lost: {line}");
        }
        for line in &report.garbage {
            println!("note: {line}");
        }
        if !report.absent.is_empty() {
            println!(
                "note: the data of {} file versions is not here (this replica's slice is {}, or it was dropped); `dmv ls --absent` lists them",
                report.absent.len(),
                repo.config.slice
            );
        }
        eprintln!(
            "checked {} objects ({} bytes){}: {}",
            report.objects_checked,
            report.bytes_checked,
            if a.full {
                format!(" in {} packs", report.packs_checked)
            } else {
                String::new()
            },
            match found.problem_count() {
                0 => "no problems found".to_string(),
                n => format!("{n} problems"),
            }
        );
    }
    Ok(u8::from(found.problem_count() > 0))
}

#[derive(Args)]
pub struct GcArgs {
    /// Also drop history only the reflog remembers (deleted branches, amended tips).
    #[arg(long)]
    prune_reflog: bool,
    /// Keep packs written less than AGE ago, whole ("now" keeps none): they
    /// may hold a transfer that is still to finish or resume. AGE is a number
    /// with s, m, h, d or w.
    #[arg(long, value_name = "AGE", default_value = "2w", value_parser = parse_age)]
    prune: std::time::Duration,
    /// First drop what this replica's slice does not keep (as `drop --unwanted`: other copies confirmed first).
    #[arg(long)]
    unwanted: bool,
    /// With --unwanted: copies that must remain elsewhere (default: the config's numcopies, else 2).
    #[arg(long, requires = "unwanted")]
    numcopies: Option<u32>,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    quiet: Quiet,
}

fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    if text == "now" {
        return Ok(std::time::Duration::ZERO);
    }
    let unit = |s: &str| -> Option<u64> {
        Some(match s {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86400,
            "w" => 7 * 86400,
            _ => return None,
        })
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (n, u) = text.split_at(split);
    match (n.parse::<u64>(), unit(u)) {
        (Ok(n), Some(u)) => Ok(std::time::Duration::from_secs(n.saturating_mul(u))),
        _ => Err(format!("{text:?} is not an age like 30m, 12h, 2w or now")),
    }
}

pub fn gc(a: GcArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_repo()?;
    if a.unwanted {
        let dropped = dmv_sync::drop_files(
            &repo,
            &dmv_sync::DropOptions {
                unwanted: true,
                numcopies: a.numcopies,
                ..Default::default()
            },
        )?;
        if !quiet && !a.json {
            println!(
                "dropped the data of {} the slice does not keep, {} bytes freed",
                crate::partial::counted(dropped.files, "file version", "file versions"),
                dropped.freed_bytes
            );
        }
    }
    let p = Bar::new("gc");
    let policy = GcPolicy {
        prune_reflog: a.prune_reflog,
        store: GcOptions {
            keep_recent: a.prune,
            ..Default::default()
        },
    };
    let report = repo.maintenance().gc(policy, &p)?;
    p.finish();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if !quiet {
        println!(
            "packs {} -> {}, bytes {} -> {}, {} unreachable objects dropped",
            report.packs_before,
            report.packs_after,
            report.bytes_before,
            report.bytes_after,
            report.objects_dropped
        );
        if report.recent_packs_kept > 0 && !a.prune.is_zero() {
            println!("{} recent packs kept whole with all they reach (gc --prune=now drops what is unreachable in them)", report.recent_packs_kept);
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct StatsArgs {
    #[arg(long)]
    json: bool,
}

pub fn stats(a: StatsArgs) -> Result<u8> {
    let repo = open_repo()?;
    let s = repo.maintenance().stats()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        println!("commits:        {}", s.commits);
        println!(
            "logical bytes:  {} ({})",
            s.logical_bytes,
            human_bytes(s.logical_bytes)
        );
        println!(
            "stored bytes:   {} ({})",
            s.stored_bytes,
            human_bytes(s.stored_bytes)
        );
        println!("dedup ratio:    {:.2}x", s.dedup_ratio);
        println!("objects:        {} ({} chunks)", s.objects, s.chunks);
        println!("packs:          {}", s.packs);
    }
    Ok(0)
}

#[derive(Args)]
pub struct ConfigArgs {
    /// The user's settings for all their repositories (in $XDG_CONFIG_HOME/dmv/config).
    #[arg(long)]
    global: bool,
    /// Every setting that is set: the global ones, then (in a repository) its own, which win.
    #[arg(short, long, conflicts_with_all = ["unset", "key"])]
    list: bool,
    /// With --list, where each setting comes from (`file:PATH`, as git).
    #[arg(long, requires = "list")]
    show_origin: bool,
    /// Remove the setting.
    #[arg(long, requires = "key", conflicts_with = "value")]
    unset: bool,
    /// A setting: user.name, user.email, merge.tool, merge.conflictStyle (merge or diff3: how a text file's conflicts are marked), remote.timeout (seconds a remote may go without answering before it is abandoned, default 30), color.ui (auto, always or never), core.pager (the command log, show and diff are paged through on a terminal; empty for none), core.editor (the program a commit message is written in), alias.NAME (what `dmv NAME` runs; `!` first for a shell command), init.defaultBranch (global: the first branch of new repositories), replica.name, drop.numcopies or drop.allowed (a bare repository refuses drops unless true).
    key: Option<String>,
    /// Its new value (shown when omitted).
    value: Option<String>,
}

/// `dmv config`, git's way: KEY shows a value (exit 1 when unset), KEY VALUE sets it.
pub fn config(a: ConfigArgs) -> Result<u8> {
    if a.global {
        let settings = dmv_repo::GlobalSettings::load()?;
        return match (a.list, a.key, a.value) {
            (true, _, _) => print_settings(settings.list(), a.show_origin.then(global_origin)),
            (_, Some(key), _) if a.unset => {
                Ok(dmv_repo::GlobalSettings::set(&key, None).map(|_| 0)?)
            }
            (_, Some(key), Some(value)) => {
                Ok(dmv_repo::GlobalSettings::set(&key, Some(&value)).map(|_| 0)?)
            }
            (_, Some(key), None) => print_value(settings.get(dmv_repo::canonical_key(&key))),
            (false, None, _) => {
                bail!("usage: dmv config [--global] KEY [VALUE] | --list | --unset KEY")
            }
        };
    }
    // As git's --list outside a repository: the global settings alone.
    if a.list && !a.global && open_repo().is_err() {
        let settings = dmv_repo::GlobalSettings::load()?;
        return print_settings(settings.list(), a.show_origin.then(global_origin));
    }
    let mut repo = open_repo()?;
    match (a.list, a.key, a.value) {
        (true, _, _) => {
            print_settings(
                dmv_repo::GlobalSettings::load()?.list(),
                a.show_origin.then(global_origin),
            )?;
            print_settings(
                repo.settings(),
                a.show_origin.then(|| "file:.dmv/config".into()),
            )
        }
        (_, Some(key), _) if a.unset => Ok(repo.set_setting(&key, None).map(|_| 0)?),
        (_, Some(key), Some(value)) => Ok(repo.set_setting(&key, Some(&value)).map(|_| 0)?),
        (_, Some(key), None) => print_value(repo.setting(&key)?),
        (false, None, _) => {
            bail!("usage: dmv config [--global] KEY [VALUE] | --list | --unset KEY")
        }
    }
}

fn print_settings(list: Vec<(String, String)>, origin: Option<String>) -> Result<u8> {
    for (key, value) in list {
        match &origin {
            Some(origin) => println!("{origin}\t{key}={value}"),
            None => println!("{key}={value}"),
        }
    }
    Ok(0)
}

/// `file:PATH` of the global settings, as `--show-origin` names it.
fn global_origin() -> String {
    format!(
        "file:{}",
        dmv_repo::global_path().unwrap_or_default().display()
    )
}

fn print_value(value: Option<String>) -> Result<u8> {
    match value {
        Some(v) => {
            println!("{v}");
            Ok(0)
        }
        None => Ok(1),
    }
}
