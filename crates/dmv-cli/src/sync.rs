//! Commands that talk to other replicas: clone, remote, fetch, push, pull, serve.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use dmv_repo::store::ObjectId;
use dmv_repo::{EarlyCheckout, Head, RefUpdate, RemoteConfig, Repository};
use dmv_sync::{fetch_remote, push, BucketOptions, FetchedRef, PushRef, RemoteSpec, SyncError, Transport};

use crate::open_repo;
use crate::progress::Progress;

/// Marks a clone that has not finished, so running it again resumes it.
const CLONE_MARKER: &str = "clone-in-progress";

fn short(id: &ObjectId) -> String {
    id.to_hex()[..12].to_string()
}

/// A remote URL as stored: local paths made absolute, so the remote still
/// works from any directory.
fn normalize_url(url: &str) -> Result<String> {
    match RemoteSpec::parse(url)?.transport {
        Transport::Path(p) => {
            let abs = p.canonicalize().with_context(|| format!("cannot find repository {}", p.display()))?;
            Ok(abs.to_string_lossy().into_owned())
        }
        _ => Ok(url.to_string()),
    }
}

/// How to reach an object-storage (`s3://`) remote, beyond the standard AWS
/// environment variables and files.
#[derive(Args, Clone, Default)]
pub struct BucketFlags {
    /// S3 endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL, else AWS).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// S3 region (default: AWS_REGION, else us-east-1).
    #[arg(long)]
    region: Option<String>,
    /// Address the bucket as BUCKET.HOST (AWS) instead of HOST/BUCKET (MinIO, Ceph, Garage).
    #[arg(long)]
    virtual_host_style: bool,
}

impl BucketFlags {
    fn options(&self) -> BucketOptions {
        BucketOptions { endpoint: self.endpoint.clone(), region: self.region.clone(), virtual_host_style: self.virtual_host_style }
    }

    fn store_in(&self, config: &mut RemoteConfig) {
        config.endpoint = self.endpoint.clone();
        config.region = self.region.clone();
        config.virtual_host_style = self.virtual_host_style;
    }
}

/// Where an object-storage remote's pack indexes are mirrored in `repo`.
fn remote_cache_dir(repo: &Repository, url: &str) -> PathBuf {
    let key = blake3::hash(url.as_bytes()).to_hex();
    repo.dmv.join("remote-cache").join(&key[..16])
}

/// A configured remote by name, or a URL/path used directly.
fn remote_spec(repo: &Repository, name_or_url: &str) -> Result<(RemoteSpec, Option<String>)> {
    let (mut spec, name) = if let Some(r) = repo.config.remotes.get(name_or_url) {
        let mut spec = RemoteSpec::parse(&r.url)?;
        spec.token = r.token.clone();
        spec.remote_dmv = r.remote_dmv.clone();
        spec.bucket = BucketOptions { endpoint: r.endpoint.clone(), region: r.region.clone(), virtual_host_style: r.virtual_host_style };
        (spec, Some(name_or_url.to_string()))
    } else {
        let looks_like_url = name_or_url.contains("://") || name_or_url.contains('/') || Path::new(name_or_url).join(".dmv").exists();
        if !looks_like_url {
            bail!("no remote named {name_or_url}; add one with `dmv remote add {name_or_url} URL`");
        }
        (RemoteSpec::parse(&normalize_url(name_or_url)?)?, None)
    };
    spec.cache_dir = Some(remote_cache_dir(repo, &spec.url));
    Ok((spec, name))
}

fn current_branch(repo: &Repository) -> Result<String> {
    match repo.head()? {
        Head::Branch(b) => Ok(b.strip_prefix("refs/heads/").unwrap_or(&b).to_string()),
        Head::Detached(_) => bail!("HEAD is detached; name the branch to use"),
    }
}

fn print_fetched(url: &str, changed: &[FetchedRef]) {
    if changed.is_empty() {
        return;
    }
    eprintln!("From {url}");
    for c in changed {
        let from = c.remote_name.strip_prefix("refs/heads/").or_else(|| c.remote_name.strip_prefix("refs/tags/")).unwrap_or(&c.remote_name);
        let to = c.local_name.strip_prefix("refs/remotes/").or_else(|| c.local_name.strip_prefix("refs/tags/")).unwrap_or(&c.local_name);
        match c.old {
            None if c.remote_name.starts_with("refs/tags/") => eprintln!(" * [new tag]         {from} -> {to}"),
            None => eprintln!(" * [new branch]      {from} -> {to}"),
            Some(old) => eprintln!("   {}..{}  {from} -> {to}", &old.to_hex()[..7], &c.new.to_hex()[..7]),
        }
    }
}

#[derive(Args)]
pub struct CloneArgs {
    /// A path, ssh://[user@]host[:port]/path, http(s)://host:port/NAME or s3://bucket/prefix.
    source: String,
    /// Directory to create (default: the source's last path component).
    directory: Option<PathBuf>,
    /// Make a repository without a working tree (for others to push to).
    #[arg(long)]
    bare: bool,
    /// Bearer token for an HTTP server (stored with the remote).
    #[arg(long)]
    token: Option<String>,
    #[command(flatten)]
    bucket: BucketFlags,
}

pub fn clone(a: CloneArgs) -> Result<u8> {
    let url = normalize_url(&a.source)?;
    let dir = match a.directory {
        Some(d) => d,
        None => {
            let last = url.trim_end_matches('/').rsplit('/').next().unwrap_or("").trim_end_matches(".dmv");
            if last.is_empty() {
                bail!("cannot guess a directory name from {url}; give one");
            }
            PathBuf::from(last)
        }
    };
    let marker = dir.join(".dmv").join(CLONE_MARKER);
    let resuming = std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == url);
    if !resuming && dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("destination {} already exists and is not empty", dir.display());
    }
    let mut spec = RemoteSpec::parse(&url)?;
    spec.token = a.token.clone();
    spec.bucket = a.bucket.options();
    let resumed = if resuming { Some(Repository::open(&dir)?) } else { None };
    if let Some(r) = &resumed {
        spec.cache_dir = Some(remote_cache_dir(r, &url));
    }
    let mut client = spec.connect()?;
    let repo = if let Some(r) = resumed {
        eprintln!("Resuming the clone of {url} into {}", dir.display());
        r
    } else {
        let repo = Repository::init_with(&dir, client.chunking(), a.bare)?;
        std::fs::write(repo.dmv.join(CLONE_MARKER), format!("{url}\n")).context("cannot mark the clone as in progress")?;
        let mut repo = repo;
        let mut origin = RemoteConfig { url: url.clone(), token: a.token.clone(), ..Default::default() };
        a.bucket.store_in(&mut origin);
        repo.config.remotes.insert("origin".into(), origin);
        repo.save_config()?;
        repo
    };
    let interrupted = |e: anyhow::Error| e.context(format!("clone of {url} stopped; run the same command again to resume"));
    let progress = Progress::new("receiving");
    // The working tree is still to fill (a resumed clone may have stopped during its checkout):
    // large files are written while their chunks arrive.
    let fills_worktree = !repo.config.bare && repo.head_commit()?.is_none() && repo.load_dirstate()?.entries.is_empty();
    let mut early = match fills_worktree {
        true => Some(EarlyCheckout::new(&repo)?),
        false => None,
    };
    let (head, changed, stats) = fetch_remote(&repo, client.as_mut(), "origin", &|d, t| progress.update(d, t), early.as_mut()).map_err(|e| interrupted(e.into()))?;
    progress.finish();
    drop(client);
    print_fetched(&url, &changed);

    let remote_branches = repo.refs.list("refs/remotes/origin/")?;
    let head_branch = head.unwrap_or_else(|| "refs/heads/main".into());
    let short_head = head_branch.strip_prefix("refs/heads/").unwrap_or(&head_branch).to_string();
    let mut updates = Vec::new();
    for (name, id) in &remote_branches {
        let Some(branch) = name.strip_prefix("refs/remotes/origin/") else { continue };
        // A bare clone mirrors every branch; a working clone starts with the remote's HEAD branch.
        if a.bare || branch == short_head {
            updates.push(RefUpdate { name: format!("refs/heads/{branch}"), expected: None, new: Some(*id) });
        }
    }
    let _wlock = repo.lock_worktree()?;
    repo.set_head(&Head::Branch(format!("refs/heads/{short_head}")))?;
    let head_tip = updates.iter().find(|u| u.name == format!("refs/heads/{short_head}")).and_then(|u| u.new);
    // The working tree is written while HEAD is still unborn (so it counts as
    // clean), then the branch is created: a resumed clone whose branch exists
    // has its files.
    if let (Some(tip), true) = (head_tip, fills_worktree) {
        let tree = repo.commit(&tip)?.tree;
        // A clone stopped during its checkout before keeps what is in place and right.
        let mut written = match resuming {
            true => repo.take_over_interrupted_checkout(&tree).map_err(|e| interrupted(e.into()))?,
            false => Default::default(),
        };
        if let Some(early) = early {
            let early_written = early.finish(&repo).map_err(|e| interrupted(e.into()))?;
            if std::env::var_os("DMV_TRACE").is_some() {
                eprintln!("trace: files-written-while-receiving {}", early_written.len());
            }
            written.extend(early_written);
        }
        let progress = Progress::new("checkout");
        repo.checkout_tree_with(&tree, &written, &|d, t| progress.update(d, t)).map_err(|e| interrupted(e.into()))?;
    }
    if head_tip.is_none() {
        eprintln!("warning: you cloned an empty repository");
    }
    if !updates.is_empty() {
        repo.update_refs(&updates, &repo.who(), &format!("clone: from {url}")).map_err(|e| interrupted(e.into()))?;
    }
    std::fs::remove_file(repo.dmv.join(CLONE_MARKER)).context("cannot clear the clone marker")?;
    eprintln!("Cloned {url} into {}: {} objects, {} bytes of content received", dir.display(), stats.objects, stats.chunk_bytes);
    Ok(0)
}

#[derive(Args)]
pub struct RemoteArgs {
    #[command(subcommand)]
    action: Option<RemoteAction>,
    /// With no action: show URLs too.
    #[arg(short, long)]
    verbose: bool,
}

#[derive(Subcommand)]
enum RemoteAction {
    /// Add a remote: a path, ssh://[user@]host[:port]/path, http(s)://host:port/NAME or s3://bucket/prefix.
    Add {
        name: String,
        url: String,
        /// Bearer token for an HTTP server (DMV_TOKEN overrides it).
        #[arg(long)]
        token: Option<String>,
        /// The dmv command on the far side of ssh (default: dmv).
        #[arg(long)]
        remote_dmv: Option<String>,
        #[command(flatten)]
        bucket: BucketFlags,
    },
    /// Remove a remote and its remote-tracking branches.
    Remove { name: String },
    /// List remotes.
    List {
        #[arg(long)]
        json: bool,
    },
}

pub fn remote(a: RemoteArgs) -> Result<u8> {
    let mut repo = open_repo()?;
    match a.action {
        None | Some(RemoteAction::List { json: false }) => {
            for (name, r) in &repo.config.remotes {
                if a.verbose {
                    println!("{name}\t{}", r.url);
                } else {
                    println!("{name}");
                }
            }
        }
        Some(RemoteAction::List { json: true }) => {
            let list: BTreeMap<&String, &String> = repo.config.remotes.iter().map(|(n, r)| (n, &r.url)).collect();
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        Some(RemoteAction::Add { name, url, token, remote_dmv, bucket }) => {
            dmv_repo::validate_ref_name(&format!("refs/remotes/{name}/x")).map_err(|_| anyhow!("{name:?} is not a valid remote name"))?;
            if name.contains('/') {
                bail!("{name:?} is not a valid remote name");
            }
            if repo.config.remotes.contains_key(&name) {
                bail!("remote {name} already exists");
            }
            let url = normalize_url(&url)?;
            let mut config = RemoteConfig { url, token, remote_dmv, ..Default::default() };
            bucket.store_in(&mut config);
            repo.config.remotes.insert(name, config);
            repo.save_config()?;
        }
        Some(RemoteAction::Remove { name }) => {
            let Some(removed) = repo.config.remotes.remove(&name) else {
                bail!("no remote named {name}");
            };
            // An object-storage remote's mirrored indexes go with it.
            let _ = std::fs::remove_dir_all(remote_cache_dir(&repo, &removed.url));
            let tracking = repo.refs.list(&format!("refs/remotes/{name}/"))?;
            let deletes: Vec<RefUpdate> = tracking.into_iter().map(|(n, id)| RefUpdate { name: n, expected: Some(Some(id)), new: None }).collect();
            if !deletes.is_empty() {
                repo.update_refs(&deletes, &repo.who(), &format!("remote remove {name}"))?;
            }
            repo.save_config()?;
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct FetchArgs {
    /// Remote name or URL (default: origin).
    remote: Option<String>,
    /// Print what changed as JSON.
    #[arg(long)]
    json: bool,
}

pub fn fetch(a: FetchArgs) -> Result<u8> {
    let repo = open_repo()?;
    let name = a.remote.unwrap_or_else(|| "origin".into());
    let (spec, remote_name) = remote_spec(&repo, &name)?;
    let mut client = spec.connect()?;
    let progress = Progress::new("receiving");
    let (_, changed, stats) = fetch_remote(&repo, client.as_mut(), remote_name.as_deref().unwrap_or("FETCH"), &|d, t| progress.update(d, t), None)?;
    progress.finish();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "updated": changed, "stats": stats }))?);
    } else {
        print_fetched(&spec.url, &changed);
    }
    Ok(0)
}

#[derive(Args)]
pub struct PullArgs {
    /// Remote name or URL (default: origin).
    remote: Option<String>,
    /// The remote branch to merge (default: the current branch's name).
    branch: Option<String>,
}

pub fn pull(a: PullArgs) -> Result<u8> {
    let repo = open_repo()?;
    let name = a.remote.unwrap_or_else(|| "origin".into());
    let (spec, remote_name) = remote_spec(&repo, &name)?;
    let remote_name = remote_name.ok_or_else(|| anyhow!("pull needs a configured remote (dmv remote add NAME URL)"))?;
    let branch = match a.branch {
        Some(b) => b,
        None => current_branch(&repo)?,
    };
    let mut client = spec.connect()?;
    let progress = Progress::new("receiving");
    let (_, changed, _) = fetch_remote(&repo, client.as_mut(), &remote_name, &|d, t| progress.update(d, t), None)?;
    progress.finish();
    drop(client);
    print_fetched(&spec.url, &changed);
    let tracking = format!("refs/remotes/{remote_name}/{branch}");
    let theirs = repo.refs.get(&tracking)?.ok_or_else(|| anyhow!("{} has no branch {branch}", spec.url))?;
    crate::mergecmd::merge_and_report(&repo, theirs, &format!("{remote_name}/{branch}"))
}

#[derive(Args)]
pub struct PushArgs {
    /// Remote name or URL (default: origin).
    remote: Option<String>,
    /// Branches to push (default: the current branch).
    branches: Vec<String>,
    /// Replace the remote branch even if that drops commits, but only if it
    /// is still where it was at your last fetch (force-with-lease).
    #[arg(short, long)]
    force: bool,
    /// Also push tags the remote does not have.
    #[arg(long)]
    tags: bool,
}

pub fn push_cmd(a: PushArgs) -> Result<u8> {
    let repo = open_repo()?;
    let name = a.remote.unwrap_or_else(|| "origin".into());
    let (mut spec, remote_name) = remote_spec(&repo, &name)?;
    // An empty object-storage location becomes a repository on its first push.
    spec.create_with = Some(repo.config.chunking);
    let branches = if a.branches.is_empty() { vec![current_branch(&repo)?] } else { a.branches };
    let mut client = spec.connect()?;
    let remote_refs = client.list_refs()?.refs;
    let remote_refs: BTreeMap<String, ObjectId> = remote_refs.into_iter().collect();
    let mut updates = Vec::new();
    let mut up_to_date = Vec::new();
    for b in &branches {
        let b = b.strip_prefix("refs/heads/").unwrap_or(b);
        let local = format!("refs/heads/{b}");
        let new = repo.refs.get(&local)?.ok_or_else(|| anyhow!("no local branch {b}"))?;
        let old = remote_refs.get(&local).copied();
        if old == Some(new) {
            up_to_date.push(b.to_string());
            continue;
        }
        if a.force {
            let lease = match &remote_name {
                Some(r) => repo.refs.get(&format!("refs/remotes/{r}/{b}"))?,
                None => old,
            };
            if lease != old {
                bail!("rejected: {b} on the remote moved since your last fetch; fetch and look before forcing");
            }
        } else if let Some(old) = old {
            if !repo.store.contains(&old)? || !repo.is_ancestor(&old, &new)? {
                bail!("rejected: the remote {b} has commits you do not have (not a fast-forward); pull first, or push --force to replace them");
            }
        }
        updates.push(PushRef { name: local, expected: old, new: Some(new) });
    }
    if a.tags {
        for (tag, id) in repo.refs.list("refs/tags/")? {
            match remote_refs.get(&tag) {
                None => updates.push(PushRef { name: tag, expected: None, new: Some(id) }),
                Some(theirs) if *theirs != id => eprintln!("warning: tag {tag} differs on the remote; not pushed"),
                Some(_) => {}
            }
        }
    }
    if updates.is_empty() {
        eprintln!("Everything up to date");
        return Ok(0);
    }
    let tips: Vec<ObjectId> = remote_refs.values().copied().collect();
    let progress = Progress::new("sending");
    let result = push(&repo, client.as_mut(), &updates, &tips, &|d, t| progress.update(d, t));
    progress.finish();
    match result {
        Ok(_) => {}
        Err(SyncError::Rejected { name, .. }) => bail!("rejected: {name} changed on the remote while pushing; pull and push again"),
        Err(e) => return Err(e.into()),
    }
    eprintln!("To {}", spec.url);
    for u in &updates {
        let short_name = u.name.strip_prefix("refs/heads/").unwrap_or(&u.name);
        match (u.expected, u.new) {
            (None, _) => eprintln!(" * [new]             {short_name} -> {short_name}"),
            (Some(o), Some(n)) => eprintln!("   {}..{}  {short_name} -> {short_name}{}", &short(&o)[..7], &short(&n)[..7], if a.force { " (forced)" } else { "" }),
            (Some(_), None) => eprintln!(" - [deleted]         {short_name}"),
        }
    }
    if let Some(r) = remote_name {
        let tracking: Vec<RefUpdate> =
            updates.iter().filter_map(|u| Some(RefUpdate { name: format!("refs/remotes/{r}/{}", u.name.strip_prefix("refs/heads/")?), expected: None, new: u.new })).collect();
        if !tracking.is_empty() {
            repo.update_refs(&tracking, &repo.who(), &format!("push {r}"))?;
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct ServeArgs {
    /// Serve one repository on stdin/stdout (what ssh remotes run).
    #[arg(long, value_name = "PATH", conflicts_with = "config")]
    stdio: Option<PathBuf>,
    /// Serve over HTTP the repositories a TOML file lists (see docs/server.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on (overrides the file's `listen`; port 0 picks one).
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
}

pub fn serve(a: ServeArgs) -> Result<u8> {
    if let Some(path) = a.stdio {
        dmv_sync::serve_stdio(&path)?;
        return Ok(0);
    }
    let Some(config_path) = a.config else {
        bail!("say what to serve: --stdio PATH or --config FILE");
    };
    let config = dmv_sync::server::ServerConfig::load(&config_path)?;
    let listen = a.listen.or_else(|| config.listen.clone()).unwrap_or_else(|| "127.0.0.1:8080".into());
    dmv_sync::server::run(config, &listen)?;
    Ok(0)
}
