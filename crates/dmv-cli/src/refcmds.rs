//! Ref plumbing: update-ref, show-ref, reflog.

use std::io::{BufRead, Write};

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dmv_repo::store::ObjectId;
use dmv_repo::{Head, RefUpdate, Repository};

use crate::repo_args::open_repo;
use dmv_repo::ref_names::{branch_ref, BRANCHES, TAGS};

#[derive(Args)]
pub struct UpdateRefArgs {
    /// Read instructions from stdin and apply them as one transaction:
    /// `create REF NEW`, `update REF NEW [OLD]`, `delete REF [OLD]` (one per line).
    #[arg(long)]
    stdin: bool,
    /// Delete REF (optionally only if it still has OLD).
    #[arg(short = 'd')]
    delete: bool,
    /// REF NEW [OLD], or with -d: REF [OLD].
    args: Vec<String>,
    /// Reflog message.
    #[arg(short = 'm', default_value = "update-ref")]
    message: String,
}

/// A 64-hex id; all zeros means "does not exist", as in Git.
fn parse_value(repo: &Repository, s: &str, check_exists: bool) -> Result<Option<ObjectId>> {
    if s.len() == 64 && s.bytes().all(|b| b == b'0') {
        return Ok(None);
    }
    let id = ObjectId::from_hex(s).ok_or_else(|| anyhow!("'{s}' is not a 64-digit object id"))?;
    if check_exists && !repo.store.contains(&id)? {
        bail!("object {s} does not exist in this repository");
    }
    Ok(Some(id))
}

fn parse_line(
    repo: &Repository,
    line: &str,
    checked: &mut std::collections::HashSet<ObjectId>,
) -> Result<Option<RefUpdate>> {
    let mut words = line.split_whitespace();
    let Some(verb) = words.next() else {
        return Ok(None);
    };
    let rest: Vec<&str> = words.collect();
    let mut value = |s: &str| -> Result<Option<ObjectId>> {
        let v = parse_value(repo, s, false)?;
        if let Some(id) = v {
            // One existence check per distinct id: a million refs often share a few targets.
            if checked.insert(id) && !repo.store.contains(&id)? {
                bail!("object {s} does not exist in this repository");
            }
        }
        Ok(v)
    };
    let update = match (verb, rest.as_slice()) {
        ("start" | "prepare" | "commit", []) => return Ok(None),
        ("create", [name, new]) => RefUpdate {
            name: name.to_string(),
            expected: Some(None),
            new: Some(value(new)?.ok_or_else(|| anyhow!("create needs a non-zero id"))?),
        },
        ("update", [name, new]) => RefUpdate {
            name: name.to_string(),
            expected: None,
            new: value(new)?,
        },
        ("update", [name, new, old]) => RefUpdate {
            name: name.to_string(),
            expected: Some(value(old)?),
            new: value(new)?,
        },
        ("delete", [name]) => RefUpdate {
            name: name.to_string(),
            expected: None,
            new: None,
        },
        ("delete", [name, old]) => RefUpdate {
            name: name.to_string(),
            expected: Some(value(old)?),
            new: None,
        },
        _ => bail!("cannot parse update-ref instruction '{line}'"),
    };
    Ok(Some(update))
}

pub fn update_ref(a: UpdateRefArgs) -> Result<u8> {
    let repo = open_repo()?;
    let mut updates = Vec::new();
    if a.stdin {
        let mut checked = std::collections::HashSet::new();
        for (n, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line?;
            match parse_line(&repo, &line, &mut checked) {
                Ok(Some(u)) => updates.push(u),
                Ok(None) => {}
                Err(e) => bail!("line {}: {e}", n + 1),
            }
        }
    } else if a.delete {
        match a.args.as_slice() {
            [name] => updates.push(RefUpdate {
                name: name.clone(),
                expected: None,
                new: None,
            }),
            [name, old] => updates.push(RefUpdate {
                name: name.clone(),
                expected: Some(parse_value(&repo, old, false)?),
                new: None,
            }),
            _ => bail!("usage: dmv update-ref -d REF [OLD]"),
        }
    } else {
        match a.args.as_slice() {
            [name, new] => updates.push(RefUpdate {
                name: name.clone(),
                expected: None,
                new: parse_value(&repo, new, true)?,
            }),
            [name, new, old] => updates.push(RefUpdate {
                name: name.clone(),
                expected: Some(parse_value(&repo, old, false)?),
                new: parse_value(&repo, new, true)?,
            }),
            _ => bail!("usage: dmv update-ref REF NEW [OLD] | -d REF [OLD] | --stdin"),
        }
    }
    if !updates.is_empty() {
        repo.update_refs(&updates, &repo.who(), &a.message)?;
    }
    Ok(0)
}

#[derive(Args)]
pub struct ShowRefArgs {
    /// Only branches.
    #[arg(long)]
    heads: bool,
    /// Only tags.
    #[arg(long)]
    tags: bool,
    /// Show refs whose name is, or ends with `/`, one of these.
    patterns: Vec<String>,
}

pub fn show_ref(a: ShowRefArgs) -> Result<u8> {
    let repo = open_repo()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut found = 0usize;
    // A full name is one lookup, not a listing.
    if a.patterns.len() == 1 && a.patterns[0].starts_with("refs/") && !a.heads && !a.tags {
        if let Some(id) = repo.refs.get(&a.patterns[0])? {
            writeln!(out, "{id} {}", a.patterns[0])?;
            found = 1;
        }
    } else {
        let prefix = match (a.heads, a.tags) {
            (true, false) => BRANCHES,
            (false, true) => TAGS,
            _ => "",
        };
        for (name, id) in repo.refs.list(prefix)? {
            let wanted = a.patterns.is_empty()
                || a.patterns
                    .iter()
                    .any(|p| name == *p || name.ends_with(&format!("/{p}")));
            if wanted {
                writeln!(out, "{id} {name}")?;
                found += 1;
            }
        }
    }
    out.flush()?;
    Ok(if found == 0 { 1 } else { 0 })
}

#[derive(Args)]
pub struct ReflogArgs {
    /// The ref (default: HEAD's branch); kept after the ref is deleted.
    #[arg(name = "REF")]
    name: Option<String>,
    /// Show at most N entries (also `-N`).
    #[arg(short = 'n', long = "max-count")]
    max_count: Option<usize>,
}

pub fn reflog(a: ReflogArgs) -> Result<u8> {
    let repo = open_repo()?;
    let name = match a.name.as_deref() {
        None | Some("HEAD") => match repo.head()? {
            Head::Branch(b) => b,
            Head::Detached(_) => bail!("HEAD is detached; name a ref"),
        },
        Some(n) if n.starts_with("refs/") => n.to_string(),
        Some(n) => repo.full_ref(n)?.unwrap_or_else(|| branch_ref(n)),
    };
    let short = name.trim_start_matches(BRANCHES).to_string();
    let log = repo.refs.reflog(&name)?;
    if log.is_empty() && repo.resolve(&name).is_err() {
        bail!(
            "unknown revision or path: {}",
            a.name.as_deref().unwrap_or(&name)
        );
    }
    let mut out = std::io::stdout().lock();
    for (i, e) in log
        .iter()
        .enumerate()
        .take(a.max_count.unwrap_or(usize::MAX))
    {
        let new = e
            .new
            .map(|v| ObjectId(v).short())
            .unwrap_or_else(|| "(deleted)".into());
        writeln!(out, "{new} {short}@{{{i}}}: {} ({})", e.message, e.who)?;
    }
    Ok(0)
}

#[derive(Args)]
pub struct RevParseArgs {
    /// Revisions to resolve: HEAD, a branch, a tag, an id or a prefix of one, NAME@{N}, @{u}, @{-1}, each followed by ~N, ^ or ^N; REV:PATH for the id of a file or folder in it, :PATH for the staged file's.
    revs: Vec<String>,
    /// Print abbreviated ids.
    #[arg(long)]
    short: bool,
    /// Print a name instead of an id: the branch HEAD is on (`HEAD` when detached), a branch or tag as given.
    #[arg(long)]
    abbrev_ref: bool,
    /// Print the top folder of the working tree.
    #[arg(long)]
    show_toplevel: bool,
    /// Print the repository's own folder (`.dmv`, as git prints `.git`:
    /// relative from the top folder, else whole).
    #[arg(long, alias = "dmv-dir")]
    git_dir: bool,
    /// Print `true` in a working tree, `false` in a bare repository.
    #[arg(long)]
    is_inside_work_tree: bool,
    /// Exactly one revision, which must resolve.
    #[arg(long)]
    verify: bool,
}

/// `git rev-parse`'s everyday uses: ids of revisions for scripts, the current branch, the top folder.
pub fn rev_parse(a: RevParseArgs) -> Result<u8> {
    let repo = open_repo()?;
    if a.git_dir {
        let here = std::env::current_dir()
            .ok()
            .and_then(|d| dmv_os::canonicalize(&d).ok());
        match here.as_deref() == repo.dmv.parent() {
            true => println!(
                "{}",
                std::path::Path::new(repo.dmv.file_name().unwrap_or_default()).display()
            ),
            false => println!("{}", repo.dmv.display()),
        }
    }
    if a.is_inside_work_tree {
        println!("{}", repo.require_worktree().is_ok());
    }
    if a.show_toplevel {
        repo.require_worktree()?;
        println!("{}", repo.root.display());
    }
    if a.verify && a.revs.len() != 1 {
        bail!("--verify takes exactly one revision");
    }
    for rev in &a.revs {
        if a.abbrev_ref {
            if let Some(name) = repo.symbolic_name(rev)? {
                println!("{name}");
                continue;
            }
            let name = match (rev.as_str(), repo.head()?) {
                ("HEAD", Head::Branch(b)) => b.strip_prefix(BRANCHES).unwrap_or(&b).to_string(),
                ("HEAD", Head::Detached(_)) => "HEAD".to_string(),
                (other, _) => match repo.full_ref(other)? {
                    Some(full) => full
                        .strip_prefix(BRANCHES)
                        .or_else(|| full.strip_prefix("refs/"))
                        .unwrap_or(&full)
                        .to_string(),
                    None => bail!("unknown revision {other}"),
                },
            };
            println!("{name}");
            continue;
        }
        let id = match rev.split_once(':') {
            Some((commit, path)) => repo.history().entry_at(commit, path)?.1.id,
            None => repo.resolve_unpeeled(rev)?,
        };
        println!("{}", if a.short { id.short() } else { id.to_hex() });
    }
    Ok(0)
}
