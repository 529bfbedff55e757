//! Partial replicas: `slice`, `ls`, `get`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use dmv_repo::{human_bytes, Slice};
use dmv_sync::{GetOptions, Reach};

use crate::progress::{Phases, Quiet};
use crate::repo_args::{open_repo, printable, repo_paths, show_path};

#[derive(Args)]
pub struct SliceArgs {
    #[command(subcommand)]
    action: Option<SliceAction>,
}

#[derive(Subcommand)]
enum SliceAction {
    /// Change the slice: full, meta, paths:GLOB[,GLOB…] or recent:N. Widening fetches what is now inside.
    Set {
        slice: String,
        /// The remote to fetch from (default: the first that answers, origin first).
        #[arg(long)]
        remote: Option<String>,
    },
}

pub fn slice(a: SliceArgs) -> Result<u8> {
    let mut repo = open_repo()?;
    match a.action {
        None => println!("{}", repo.config.slice),
        Some(SliceAction::Set { slice, remote }) => {
            let slice = Slice::parse(&slice)?;
            let changed =
                dmv_sync::set_slice(&mut repo, slice, remote.as_deref(), &Phases::default())?;
            eprintln!("slice {} -> {}", changed.old, changed.new);
            if let Some(from) = &changed.got.from {
                eprintln!(
                    "fetched the data of {} ({} bytes) from {from}",
                    counted(changed.got.fetched, "file version", "file versions"),
                    changed.got.stats.chunk_bytes
                );
            }
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct ReplicaArgs {
    /// Name this replica (what other replicas' whereis shows; default user@host:path).
    #[arg(long)]
    name: Option<String>,
    /// Publish a URL this replica can be reached at (http://, https:// or
    /// ssh://, no credentials): it travels with the location log, and any
    /// replica that hears of it may fetch from here. Repeatable.
    #[arg(long, value_name = "URL")]
    publish: Vec<String>,
    /// Stop publishing a URL. Repeatable.
    #[arg(long, value_name = "URL")]
    unpublish: Vec<String>,
    /// Declare this replica metered (e.g. a phone on mobile data): others
    /// do not pull file data from it unless they name it.
    #[arg(long, conflicts_with = "unmetered")]
    metered: bool,
    /// Declare this replica not metered.
    #[arg(long)]
    unmetered: bool,
    #[arg(long)]
    json: bool,
}

pub fn replica(a: ReplicaArgs) -> Result<u8> {
    let mut repo = open_repo()?;
    if let Some(name) = a.name {
        repo.update_config(|c| {
            c.replica_name = Some(name);
            Ok::<_, dmv_repo::RepoError>(())
        })?;
    }
    for url in &a.unpublish {
        if !dmv_sync::unpublish(&mut repo, url)? {
            eprintln!("warning: {} was not published", printable(url));
        }
    }
    for url in &a.publish {
        dmv_sync::publish(&mut repo, url)?;
    }
    if a.metered || a.unmetered {
        dmv_sync::set_metered(&mut repo, a.metered)?;
    }
    let card = repo.copies().my_card();
    if a.json {
        let shown = serde_json::json!({ "id": repo.copies().replica_id()?.to_string(), "name": card.name, "published": card.urls, "metered": card.metered });
        println!("{}", serde_json::to_string_pretty(&shown)?);
        return Ok(0);
    }
    println!("{} {}", repo.copies().replica_id()?, card.name);
    for url in &card.urls {
        println!("published at {}", printable(url));
    }
    if card.metered {
        println!("metered: other replicas do not pull file data from here unless they name it");
    }
    Ok(0)
}

#[derive(Args)]
pub struct LsArgs {
    /// Only files whose data is not here.
    #[arg(long, conflicts_with = "present")]
    absent: bool,
    /// Only files whose data is here.
    #[arg(long)]
    present: bool,
    #[arg(long)]
    json: bool,
    /// Sizes in bytes (for scripts), not as 2.9 MiB.
    #[arg(long)]
    bytes: bool,
    /// [REV] [PATH…]: a commit (default HEAD), then paths.
    args: Vec<String>,
}

pub fn ls(a: LsArgs) -> Result<u8> {
    let repo = open_repo()?;
    let (rev, paths) = match a.args.split_first() {
        Some((first, rest)) if repo.resolve(first).is_ok() => (repo.resolve(first)?, rest.to_vec()),
        _ => (repo.resolve("HEAD")?, a.args.clone()),
    };
    let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    let specs = repo_paths(&repo, &paths)?;
    let files = match repo.head_commit()? == Some(rev) {
        true => repo.copies().availability_here(&specs)?,
        false => repo
            .copies()
            .availability(&repo.commit(&rev)?.tree, &specs)?,
    };
    let shown: Vec<_> = files
        .into_iter()
        .filter(|f| !(a.absent && f.present || a.present && !f.present))
        .collect();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        for f in &shown {
            let size = if a.bytes {
                f.entry.size.to_string()
            } else {
                dmv_repo::human_bytes(f.entry.size)
            };
            // Data here, file not written (a diff or an archive fetched it): `get` writes it.
            let state = match (f.present, f.written) {
                (false, _) => "absent",
                (true, Some(false)) => "stored",
                (true, _) => "present",
            };
            println!("{state:<7} {size:>12}  {}", show_path(&f.path));
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct GetArgs {
    /// Files or directories whose data to fetch.
    paths: Vec<PathBuf>,
    /// Fetch the data of this commit's version of the paths (the working tree is left alone).
    #[arg(long)]
    rev: Option<String>,
    /// The remote to fetch from (default: the first that answers, origin first).
    #[arg(long)]
    remote: Option<String>,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn get(a: GetArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_repo()?;
    let rev = a.rev.as_deref().map(|r| repo.resolve(r)).transpose()?;
    let options = GetOptions {
        paths: repo_paths(&repo, &a.paths)?,
        rev,
        remote: a.remote,
    };
    let got = dmv_sync::get(&repo, &options, &Phases::default())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&got)?);
    } else if !quiet {
        match &got.from {
            Some(from) => eprintln!(
                "got the data of {} ({} bytes) from {from}; {} written",
                counted(got.fetched, "file version", "file versions"),
                got.stats.chunk_bytes,
                counted(got.written, "file", "files")
            ),
            None => eprintln!(
                "the data is already here; {} written",
                counted(got.written, "file", "files")
            ),
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct WhereisArgs {
    /// Files or directories (default: everything).
    paths: Vec<PathBuf>,
    /// The commit whose files to look up (default HEAD).
    #[arg(long)]
    rev: Option<String>,
    #[arg(long)]
    json: bool,
}

pub fn whereis(a: WhereisArgs) -> Result<u8> {
    let repo = open_repo()?;
    let rev = repo.resolve(a.rev.as_deref().unwrap_or("HEAD"))?;
    let tree = repo.commit(&rev)?.tree;
    // Printed as each file is known: at 100,000 files the answer is not held whole.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut first = true;
    if a.json {
        write!(out, "[")?;
    }
    let unasked = dmv_sync::whereis(&repo, &tree, &repo_paths(&repo, &a.paths)?, &mut |f| {
        let written = match a.json {
            true => write_json_item(&mut out, &f, std::mem::replace(&mut first, false)),
            false => write_copies(&mut out, &f),
        };
        written.map_err(|e| dmv_sync::SyncError::local("cannot write to standard output", e))
    })?;
    if a.json {
        writeln!(out, "{}]", if first { "" } else { "\n" })?;
    }
    out.flush()?;
    for remote in unasked {
        eprintln!("warning: could not ask {remote}; its copies are as last known");
    }
    Ok(0)
}

fn write_json_item(
    out: &mut dyn Write,
    f: &dmv_sync::FileCopies,
    first: bool,
) -> std::io::Result<()> {
    let item = serde_json::to_string_pretty(f).map_err(std::io::Error::other)?;
    write!(out, "{}\n{}", if first { "" } else { "," }, item)
}

fn write_copies(out: &mut dyn Write, f: &dmv_sync::FileCopies) -> std::io::Result<()> {
    // As git-annex words it: "(1 copy)", "(2 copies)".
    let copies = counted(f.copies.len(), "copy", "copies");
    writeln!(out, "{} ({copies})", show_path(&f.path))?;
    for c in &f.copies {
        let name = match (&c.name, c.here) {
            (Some(n), true) => format!("here ({})", printable(n)),
            (None, true) => "here".to_string(),
            (Some(n), _) => printable(n),
            (None, _) => "?".to_string(),
        };
        let how = if c.here {
            String::new()
        } else {
            format!(" [{}]", reach_facts(c))
        };
        writeln!(out, "  {}  {name}{how}", c.replica)?;
    }
    Ok(())
}

/// A copy's class and what it was judged by, e.g. `near, 3 ms, 110 MiB/s`;
/// a class from an earlier command says so.
fn reach_facts(c: &dmv_sync::CopyInfo) -> String {
    let mut facts = vec![c.class.name().to_string()];
    if matches!(c.class, Reach::Near | Reach::Far) {
        facts.extend(c.connect_ms.map(|ms| format!("{ms} ms")));
        facts.extend(
            c.bytes_per_sec
                .map(|speed| format!("{}/s", human_bytes(speed))),
        );
        // Measures from an earlier command say so (a metered copy is far without any).
        if !c.reachable && facts.len() > 1 {
            facts.push("when last asked".into());
        }
    }
    if c.metered {
        facts.push("metered".into());
    }
    if !c.reachable && !c.published.is_empty() {
        facts.push(format!(
            "at {}",
            c.published
                .iter()
                .map(|u| printable(u))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    facts.join(", ")
}

#[derive(Args)]
pub struct DropArgs {
    /// Files or directories whose data to free.
    #[arg(required_unless_present = "unwanted")]
    paths: Vec<PathBuf>,
    /// The files as they are in this revision, not in the checked-out one (an old version's data).
    #[arg(long, value_name = "REV")]
    rev: Option<String>,
    /// Every version here that this replica's slice (paths:, recent:N, meta) does not keep, in any commit.
    #[arg(long, conflicts_with_all = ["paths", "rev", "from"])]
    unwanted: bool,
    /// Free the data on this remote instead of here.
    #[arg(long, value_name = "REMOTE")]
    from: Option<String>,
    /// Copies that must remain elsewhere, confirmed live (default: the config's numcopies, else 2).
    #[arg(long)]
    numcopies: Option<u32>,
    /// Drop without confirming any other copy: if none exists, the data is lost for good.
    #[arg(long)]
    force: bool,
    #[arg(long)]
    json: bool,
}

pub fn drop(a: DropArgs) -> Result<u8> {
    let repo = open_repo()?;
    if a.force {
        eprintln!("warning: --force drops without confirming other copies; if no other replica holds this data, it is gone for good");
    }
    let rev = a.rev.as_deref().map(|r| repo.resolve(r)).transpose()?;
    let options = dmv_sync::DropOptions {
        paths: repo_paths(&repo, &a.paths)?,
        from: a.from.clone(),
        numcopies: a.numcopies,
        force: a.force,
        rev,
        unwanted: a.unwanted,
    };
    let dropped = dmv_sync::drop_files(&repo, &options)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&dropped)?);
    } else {
        let place = a
            .from
            .as_deref()
            .map_or("here".to_string(), |r| format!("from {r}"));
        let by = if dropped.confirmed_by.is_empty() {
            String::new()
        } else {
            format!("; copies confirmed by {}", dropped.confirmed_by.join(", "))
        };
        eprintln!(
            "dropped the data of {} {place}, {} bytes freed{by}",
            counted(dropped.files, "file version", "file versions"),
            dropped.freed_bytes
        );
        if dropped.files_removed > 0 {
            eprintln!(
                "removed {} from the working tree: absent now (`dmv get PATH` brings them back)",
                counted(dropped.files_removed, "file", "files")
            );
        }
    }
    Ok(0)
}

/// "1 file version", "3 file versions": a count with its noun, as git words them.
pub(crate) fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
