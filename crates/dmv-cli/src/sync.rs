//! Commands that talk to other replicas: clone, remote, fetch, push, pull, serve.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use dmv_repo::store::ObjectId;
use dmv_repo::RemoteConfig;
use dmv_sync::{BucketOptions, CloneOptions, ClonePlan, FetchedRef, PushOptions};

use crate::progress::{Phases, Quiet};
use crate::repo_args::{open_repo, open_worktree, printable};
use dmv_repo::ref_names::{BRANCHES, REMOTE_BRANCHES, TAGS};

fn short(id: &ObjectId) -> String {
    // The same length as everywhere else (log, commit, status).
    id.short()
}

// How to reach an object-storage (`s3://`) remote, beyond the standard AWS
// environment variables and files. (Not a doc comment: clap would make it the
// about text of the commands that flatten it.)
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
        BucketOptions {
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            virtual_host_style: self.virtual_host_style,
            ..Default::default()
        }
    }
}

fn print_fetched(url: &str, changed: &[FetchedRef]) {
    if changed.is_empty() {
        return;
    }
    eprintln!("From {url}");
    for c in changed {
        let from = c
            .remote_name
            .strip_prefix(BRANCHES)
            .or_else(|| c.remote_name.strip_prefix(TAGS))
            .unwrap_or(&c.remote_name);
        let to = c
            .local_name
            .strip_prefix(REMOTE_BRANCHES)
            .or_else(|| c.local_name.strip_prefix(TAGS))
            .unwrap_or(&c.local_name);
        match c.old {
            None if c.remote_name.starts_with(TAGS) => {
                eprintln!(" * [new tag]         {from} -> {to}")
            }
            None => eprintln!(" * [new branch]      {from} -> {to}"),
            Some(old) => eprintln!("   {}..{}  {from} -> {to}", short(&old), short(&c.new)),
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
    /// Fetch only some files' data: meta (none), paths:GLOB[,GLOB…], or recent:N (the last N commits of each branch).
    #[arg(long, value_parser = |s: &str| dmv_repo::Slice::parse(s))]
    slice: Option<dmv_repo::Slice>,
    /// A device key file that opens an encrypted bucket (besides this
    /// device's own key and DMV_PASSPHRASE); kept with the remote.
    #[arg(long, value_name = "FILE")]
    identity: Option<PathBuf>,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn clone(a: CloneArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let mut bucket = a.bucket.options();
    let identity = match a.identity {
        Some(file) => {
            let file = std::path::absolute(&file)?;
            let key = dmv_sync::read_identity(&file)?;
            bucket.keys.identities.push(std::sync::Arc::new(key));
            Some(file)
        }
        None => None,
    };
    let options = CloneOptions {
        source: a.source,
        directory: a.directory,
        bare: a.bare,
        token: a.token,
        bucket,
        identity,
        slice: a.slice.unwrap_or_default(),
        ..Default::default()
    };
    let mut plan = ClonePlan::new(options)?;
    let mut remote = match plan.spec.connect() {
        // An encrypted bucket this device has no key for: a passphrase, if
        // someone is at the terminal to type it (nothing was written yet).
        Err(dmv_sync::SyncError::Bucket(dmv_sync::BucketError::Locked { url, .. }))
            if crate::keys::can_ask_passphrase() =>
        {
            let passphrase = crate::keys::ask_passphrase(&format!("Passphrase for {url}: "))?;
            plan.spec.bucket.keys.passphrase = Some(std::sync::Arc::new(passphrase));
            plan.spec.connect()?
        }
        connected => connected?,
    };
    if plan.resuming && !quiet {
        eprintln!(
            "Resuming the clone of {} into {}",
            plan.url,
            plan.dir.display()
        );
    }
    let dir = plan.dir.clone();
    let cloned = plan.run(remote.as_mut(), &Phases::default())?;
    drop(remote);
    if !quiet {
        print_fetched(&cloned.url, &cloned.updated);
    }
    if let (Some(n), Some(_)) = (
        cloned.written_while_receiving,
        std::env::var_os("DMV_TRACE"),
    ) {
        eprintln!("trace: files-written-while-receiving {n}");
    }
    if cloned.empty {
        eprintln!("warning: you cloned an empty repository");
    }
    if !quiet {
        eprintln!(
            "Cloned {} into {}: {} objects, {} bytes of content received",
            cloned.url,
            dir.display(),
            cloned.stats.objects,
            cloned.stats.chunk_bytes
        );
    }
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
        /// Keep the repository encrypted (made so by the first push; see
        /// `dmv keys`): the bucket, or a server that keeps it sealed, sees
        /// only ciphertext.
        #[arg(long)]
        encrypt: bool,
    },
    /// Remove a remote and its remote-tracking branches.
    Remove { name: String },
    /// Change a remote's URL; with --add, give it another URL, tried when
    /// the others do not answer (a hub behind several addresses).
    SetUrl {
        name: String,
        url: String,
        /// Add the URL after the remote's others instead of replacing the first.
        #[arg(long, conflicts_with = "delete")]
        add: bool,
        /// Remove the URL from the remote.
        #[arg(long)]
        delete: bool,
    },
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
                    for url in r.urls() {
                        println!("{name}\t{}", printable(url));
                    }
                } else {
                    println!("{name}");
                }
            }
        }
        Some(RemoteAction::List { json: true }) => {
            let list: BTreeMap<&String, &String> = repo
                .config
                .remotes
                .iter()
                .map(|(n, r)| (n, &r.url))
                .collect();
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        Some(RemoteAction::Add {
            name,
            url,
            token,
            remote_dmv,
            bucket,
            encrypt,
        }) => {
            let sealable = ["s3://", "http://", "https://"];
            if encrypt && !sealable.iter().any(|s| url.starts_with(s)) {
                bail!("--encrypt is for object-storage remotes (s3://) and for dmv servers that keep a repository sealed (http(s)://): a path or ssh holds what you push as you pushed it");
            }
            let config = RemoteConfig {
                url,
                token,
                remote_dmv,
                endpoint: bucket.endpoint,
                region: bucket.region,
                virtual_host_style: bucket.virtual_host_style,
                encrypt,
                ..Default::default()
            };
            dmv_sync::add_remote(&mut repo, &name, config)?;
        }
        Some(RemoteAction::SetUrl {
            name,
            url,
            add,
            delete,
        }) => {
            let change = match (add, delete) {
                (true, _) => dmv_sync::UrlChange::Add,
                (_, true) => dmv_sync::UrlChange::Delete,
                _ => dmv_sync::UrlChange::Replace,
            };
            dmv_sync::set_remote_url(&mut repo, &name, &url, change)?;
        }
        Some(RemoteAction::Remove { name }) => {
            dmv_sync::remove_remote(&mut repo, &name)?;
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct FetchArgs {
    /// Remote name or URL (default: the current branch's upstream remote, else origin, else the only remote).
    remote: Option<String>,
    /// Print what changed as JSON.
    #[arg(long)]
    json: bool,
    /// Remove the remote-tracking branches whose branch is gone from the remote.
    #[arg(short, long)]
    prune: bool,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn fetch(a: FetchArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_repo()?;
    let remote = match &a.remote {
        Some(name) => dmv_sync::find_remote(&repo, name)?,
        None => dmv_sync::default_remote(&repo, "fetch")?,
    };
    let fetched = dmv_sync::fetch(
        &repo,
        remote.connect_from(&repo)?.as_mut(),
        remote.name.as_deref().unwrap_or("FETCH"),
        &Phases::default(),
    )?;
    let pruned = match (a.prune, &remote.name) {
        (true, Some(name)) => dmv_sync::prune_remote_branches(&repo, name, &fetched)?,
        (true, None) => {
            bail!("--prune needs a named remote (its remote-tracking branches are pruned)")
        }
        (false, _) => Vec::new(),
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "updated": fetched.updated, "pruned": pruned, "stats": fetched.stats })
            )?
        );
    } else if !quiet {
        print_fetched(&remote.spec.url, &fetched.updated);
        for name in &pruned {
            eprintln!(
                " - [deleted]         (none) -> {}",
                name.strip_prefix("refs/remotes/").unwrap_or(name)
            );
        }
    }
    Ok(0)
}

#[derive(Args)]
pub struct PullArgs {
    /// Remote name or URL (default: the current branch's upstream remote, else origin).
    remote: Option<String>,
    /// The remote branch to merge (default: the upstream's, else the current branch's name).
    branch: Option<String>,
    /// Only move the branch forward to the remote one: refuse when a merge commit would be needed.
    #[arg(long)]
    ff_only: bool,
    /// Put the current branch's own commits on top of the remote branch instead of merging (as `dmv rebase`).
    #[arg(long, conflicts_with = "ff_only")]
    rebase: bool,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn pull(a: PullArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let repo = open_worktree()?;
    let (remote, branch) = dmv_sync::pull_source(&repo, a.remote.as_deref(), a.branch.as_deref())?;
    let name = remote.name.clone().ok_or(dmv_sync::SyncError::Address(
        dmv_sync::AddressError::NeedsNamedRemote { what: "pull" },
    ))?;
    if a.rebase {
        let (fetched, _, rebased) = dmv_sync::pull_rebase(
            &repo,
            remote.connect_from(&repo)?.as_mut(),
            &name,
            branch.as_deref(),
            &Phases::default(),
        )?;
        if !quiet {
            print_fetched(&remote.spec.url, &fetched.updated);
        }
        return crate::rebasecmd::report(&repo, rebased, quiet);
    }
    let pulled = dmv_sync::pull_with(
        &repo,
        remote.connect_from(&repo)?.as_mut(),
        &name,
        branch.as_deref(),
        a.ff_only,
        &Phases::default(),
    )?;
    if quiet {
        // Conflicts still need saying: they leave work to do.
        if !matches!(pulled.merge, dmv_repo::MergeOutcome::Conflicts(_)) {
            return Ok(0);
        }
    } else {
        print_fetched(&remote.spec.url, &pulled.fetched.updated);
    }
    crate::mergecmd::report(&repo, &pulled.merge, &pulled.label)
}

#[derive(Args)]
pub struct SyncArgs {
    /// Remote name (default: every configured remote: fetch and merge from each, then push to each).
    remote: Option<String>,
}

pub fn sync(a: SyncArgs) -> Result<u8> {
    let repo = open_repo()?;
    let Some(name) = a.remote.as_deref() else {
        let all = dmv_sync::sync_all(&repo, &Phases::default())?;
        report_mended(all.mended.as_ref());
        let mut code = 0;
        for (label, merge) in &all.offers {
            code = code.max(crate::mergecmd::report(&repo, merge, label)?);
        }
        for (name, pulled) in &all.pulled {
            print_fetched(name, &pulled.fetched.updated);
            code = code.max(crate::mergecmd::report(
                &repo,
                &pulled.merge,
                &pulled.label,
            )?);
        }
        for (name, fetched) in &all.fetched {
            print_fetched(name, &fetched.updated);
        }
        for (name, pushed) in &all.pushed {
            print_pushed(name, pushed, false, false);
        }
        if let Some(label) = &all.merge_waits {
            eprintln!("dmv: the merge of {} waits for you: settle its conflicts (dmv status) and commit; fetched and sent what was committed, merged nothing", printable(label));
            code = 1;
        }
        for (name, why) in &all.skipped {
            eprintln!("skipped {}: {}", printable(name), printable(why));
        }
        // A remote left out is a sync not done: scripts and watch mode must see it.
        if !all.skipped.is_empty() {
            let names: Vec<String> = all.skipped.iter().map(|(n, _)| printable(n)).collect();
            eprintln!(
                "dmv: sync did not reach {} of {} remotes: {}",
                names.len(),
                repo.config.remotes.len(),
                names.join(", ")
            );
            code = code.max(1);
        }
        return Ok(code);
    };
    let remote = dmv_sync::find_remote(&repo, name)?;
    let name = remote.name.clone().ok_or(dmv_sync::SyncError::Address(
        dmv_sync::AddressError::NeedsNamedRemote { what: "sync" },
    ))?;
    let synced = dmv_sync::sync(
        &repo,
        remote.connect_to_push(&repo)?.as_mut(),
        &name,
        &Phases::default(),
    )?;
    report_mended(synced.mended.as_ref());
    let mut code = 0;
    for (label, merge) in &synced.offers {
        code = code.max(crate::mergecmd::report(&repo, merge, label)?);
    }
    if let Some(pulled) = &synced.pulled {
        print_fetched(&remote.spec.url, &pulled.fetched.updated);
        code = code.max(crate::mergecmd::report(
            &repo,
            &pulled.merge,
            &pulled.label,
        )?);
    }
    if let Some(pushed) = &synced.pushed {
        print_pushed(&remote.spec.url, pushed, false, false);
    }
    Ok(code)
}

/// One line for a merge or rebase an earlier command left cut short.
pub(crate) fn report_mended(mended: Option<&dmv_repo::Mended>) {
    if let Some(line) = mended.map(mended_line) {
        println!("{line}");
    }
}

/// What a sync says of a merge or rebase an earlier command left cut short.
pub(crate) fn mended_line(mended: &dmv_repo::Mended) -> String {
    let branch = |b: &Option<String>| {
        b.as_deref().map_or("HEAD".to_string(), |b| {
            printable(b.strip_prefix("refs/heads/").unwrap_or(b))
        })
    };
    match mended {
        dmv_repo::Mended::RebaseFinished { branch: b, commit } => format!(
            "Finished the rebase of {} left cut short ({}).",
            branch(b),
            commit.short()
        ),
        dmv_repo::Mended::RebaseStopped { branch: b, commit } => {
            format!("Went on with the rebase of {} left cut short: {} conflicts; settle it and run dmv rebase --continue.", branch(b), commit.short())
        }
        dmv_repo::Mended::Undone { label } => format!(
            "Undid the merge of {} a sync left cut short; merging again.",
            printable(label)
        ),
        dmv_repo::Mended::Committed { label, commit } => format!(
            "Committed the merge of {} a sync left cut short ({}).",
            printable(label),
            commit.short()
        ),
    }
}

#[derive(Args)]
pub struct PushArgs {
    /// Remote name or URL (default: the current branch's upstream remote, else origin).
    remote: Option<String>,
    /// Branches to push (default: the current branch), or SRC:DST to push
    /// any revision to remote branch DST (`HEAD:review`).
    branches: Vec<String>,
    /// Make each pushed branch follow the remote branch it was pushed to
    /// (what `pull` then merges and `branch -vv` shows).
    #[arg(short = 'u', long = "set-upstream")]
    set_upstream: bool,
    /// Replace the remote branch even if that drops commits, but only if it
    /// is still where it was at your last fetch (force-with-lease).
    #[arg(short, long)]
    force: bool,
    /// Also push tags the remote does not have.
    #[arg(long)]
    tags: bool,
    /// Delete the named branches on the remote (as `push REMOTE :BRANCH`).
    #[arg(short, long, conflicts_with_all = ["set_upstream", "tags", "force"])]
    delete: bool,
    /// Keep holding the locks of paths this push changes (by default they
    /// are given back once the change lands, unless lock.releaseOnPush is false).
    #[arg(long)]
    keep_locks: bool,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn push(a: PushArgs) -> Result<u8> {
    let quiet = a.quiet.apply();
    let mut repo = open_repo()?;
    let remote = match &a.remote {
        Some(name) => dmv_sync::find_remote(&repo, name)?,
        None => dmv_sync::default_remote(&repo, "push")?,
    };
    // `push --delete B` and `push REMOTE :B` delete; they mix with nothing else.
    let deletions: Vec<String> = match a.delete {
        true => a.branches.clone(),
        false => a
            .branches
            .iter()
            .filter_map(|b| b.strip_prefix(':').map(str::to_string))
            .collect(),
    };
    if !deletions.is_empty() {
        if deletions.len() != a.branches.len() {
            bail!("push either deletes branches (`:BRANCH`, --delete) or pushes them, not both at once");
        }
        let deleted = dmv_sync::delete_remote_branches(
            &repo,
            remote.connect_to_push(&repo)?.as_mut(),
            remote.name.as_deref(),
            &deletions,
        )?;
        if !quiet {
            eprintln!("To {}", remote.spec.url);
            for (b, _) in deleted {
                eprintln!(" - [deleted]         {b}");
            }
        }
        return Ok(0);
    }
    if a.delete {
        bail!("usage: dmv push --delete [REMOTE] BRANCH...");
    }
    let specs = if a.branches.is_empty() {
        vec![dmv_sync::current_branch(&repo)?]
    } else {
        a.branches.clone()
    };
    let options = PushOptions {
        branches: specs.clone(),
        force: a.force,
        tags: a.tags,
        keep_locks: a.keep_locks,
    };
    let pushed = dmv_sync::push(
        &repo,
        remote.connect_to_push(&repo)?.as_mut(),
        remote.name.as_deref(),
        &options,
        &Phases::default(),
    )?;
    print_pushed(&remote.spec.url, &pushed, a.force, quiet);
    if a.set_upstream {
        let name = remote.name.clone().ok_or(dmv_sync::SyncError::Address(
            dmv_sync::AddressError::NeedsNamedRemote { what: "push -u" },
        ))?;
        let set = dmv_sync::follow_pushed(&mut repo, &name, &specs)?;
        if !quiet {
            for (branch, up) in set {
                eprintln!(
                    "branch '{branch}' set up to follow '{}/{}'.",
                    up.remote, up.branch
                );
            }
        }
    }
    Ok(0)
}

fn print_pushed(url: &str, pushed: &dmv_sync::Pushed, forced: bool, quiet: bool) {
    for tag in &pushed.tags_differing {
        eprintln!("warning: tag {tag} differs on the remote; not pushed");
    }
    if let Some(why) = &pushed.release_failed {
        eprintln!("warning: the pushed paths' locks are still yours: {why}");
    }

    if quiet {
        return;
    }
    if pushed.updated.is_empty() {
        eprintln!("Everything up to date");
        return;
    }
    eprintln!("To {url}");
    for u in &pushed.updated {
        let name = u
            .name
            .strip_prefix(BRANCHES)
            .or_else(|| u.name.strip_prefix(TAGS))
            .unwrap_or(&u.name);
        match (u.expected, u.new) {
            (None, _) if u.name.starts_with(TAGS) => {
                eprintln!(" * [new tag]         {name} -> {name}")
            }
            (None, _) => eprintln!(" * [new branch]      {name} -> {name}"),
            (Some(o), Some(n)) => eprintln!(
                "   {}..{}  {name} -> {name}{}",
                short(&o),
                short(&n),
                if forced { " (forced)" } else { "" }
            ),
            (Some(_), None) => eprintln!(" - [deleted]         {name}"),
        }
    }
    for path in &pushed.released {
        eprintln!("Unlocked {} (its change landed)", printable(path));
    }
}

#[derive(Args)]
#[command(after_help = "\
With no --config, serves the repositories named (the current one by default) on
127.0.0.1:8080 (another free port when that one is taken), each under its folder's
name: http://127.0.0.1:8080/NAME. Tokens come from your tokens file (see `dmv tokens`);
the first start makes an admin token for you (user.name, user.email) and prints the
address that logs you in with it. Reading and browsing need a token.")]
pub struct ServeArgs {
    /// Repositories to serve over HTTP without a configuration file
    /// (default: the one the current folder is in).
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Serve one repository on stdin/stdout (what ssh remotes run).
    #[arg(long, value_name = "PATH", conflicts_with = "config")]
    stdio: Option<PathBuf>,
    /// Serve over HTTP the repositories a TOML file lists (see docs/server.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on (overrides the file's `listen`; port 0 picks one).
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// Speak HTTPS with this PEM certificate chain (overrides the file's `tls_cert`).
    #[arg(long, value_name = "FILE", requires = "config")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of the certificate (overrides the file's `tls_key`).
    #[arg(long, value_name = "FILE", requires = "config")]
    tls_key: Option<PathBuf>,
}

pub fn serve(a: ServeArgs) -> Result<u8> {
    if let Some(path) = a.stdio {
        if !a.paths.is_empty() {
            bail!("--stdio serves the one repository it names: give no other PATH");
        }
        dmv_sync::serve_stdio(&path)?;
        return Ok(0);
    }
    let Some(config_path) = a.config else {
        return serve_paths(a.paths, a.listen);
    };
    if !a.paths.is_empty() {
        bail!("--config names the repositories to serve: give no PATH with it");
    }
    let mut config = dmv_server::ServerConfig::load(&config_path)?;
    if !config.tokens.is_empty() && dmv_server::ServerConfig::readable_by_others(&config_path) {
        eprintln!(
            "warning: {} holds tokens and other accounts may read it: chmod 600 {}",
            config_path.display(),
            config_path.display()
        );
    }
    if let Some(file) = &config.tokens_file {
        warn_if_readable(file);
    }
    config.tls_cert = a.tls_cert.or(config.tls_cert);
    config.tls_key = a.tls_key.or(config.tls_key);
    let listen = a
        .listen
        .or_else(|| config.listen.clone())
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    dmv_server::run(config, &listen)?;
    Ok(0)
}

/// A tokens file holds hashes only, but who may log in is still nobody
/// else's business.
fn warn_if_readable(file: &std::path::Path) {
    if dmv_server::ServerConfig::readable_by_others(file) {
        eprintln!(
            "warning: other accounts may read the tokens file {}: chmod 600 {}",
            file.display(),
            file.display()
        );
    }
}

/// The URL name of a repository at `root`: its folder's name, without a
/// `.dmv` ending (`photos.dmv` is served as `photos`).
fn url_name(root: &std::path::Path) -> Result<String> {
    let Some(name) = root.file_name().and_then(|n| n.to_str()) else {
        bail!(
            "{} has no folder name to serve it under: use --config to name it",
            root.display()
        );
    };
    let name = name
        .strip_suffix(".dmv")
        .filter(|n| !n.is_empty())
        .unwrap_or(name);
    Ok(name.to_string())
}

/// Who runs `dmv serve` for the admin token made at its first start: the
/// user commits are signed by (`user.name`, else the account), and the
/// name and email when they are set (not the `USER@localhost` stand-in).
fn person_of(repo: &dmv_repo::Repository) -> (String, Option<String>, Option<String>) {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let global = dmv_repo::GlobalSettings::load().unwrap_or_default();
    let name = env("DMV_AUTHOR_NAME")
        .or_else(|| repo.config.user_name.clone())
        .or(global.user_name);
    let email = env("DMV_AUTHOR_EMAIL")
        .or_else(|| repo.config.user_email.clone())
        .or(global.user_email);
    let user = name.clone().unwrap_or_else(|| repo.identity().name);
    (user, name, email)
}

/// `dmv serve [PATH…]`: the repositories under their folders' names, on
/// loopback, with the user's tokens file; an admin token for the user at
/// the first start.
fn serve_paths(paths: Vec<PathBuf>, listen: Option<String>) -> Result<u8> {
    let paths = if paths.is_empty() {
        vec![std::env::current_dir()?]
    } else {
        paths
    };
    let mut repos: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut identity = None;
    for path in &paths {
        let repo = dmv_repo::Repository::discover(path)?;
        let name = url_name(&repo.root)?;
        match repos.get(&name) {
            Some(other) if *other == repo.root => continue,
            Some(other) => bail!(
                "{} and {} would both be served as {name}: serve them with --config, naming each",
                other.display(),
                repo.root.display()
            ),
            None => {}
        }
        identity.get_or_insert_with(|| person_of(&repo));
        repos.insert(name, repo.root.clone());
    }
    let Some(tokens_path) = dmv_server::TokensFile::default_path() else {
        bail!("no home folder (HOME or XDG_CONFIG_HOME) to keep the server's tokens in");
    };
    let tokens = dmv_server::TokensFile::read(&tokens_path)?;
    warn_if_readable(&tokens_path);
    let made = if tokens.has_admin() {
        None
    } else {
        let Some(me) = identity else {
            bail!("no repository to serve");
        };
        let (user, name, email) = me;
        let new = dmv_server::NewToken {
            user,
            name,
            email,
            access: dmv_server::TokenAccess::Admin,
            write: None,
            groups: Vec::new(),
        };
        let (token, secret) = dmv_server::TokensFile::add(&tokens_path, &new)?;
        Some((token, secret))
    };
    let config = dmv_server::ServerConfig::for_repos(repos, tokens_path.clone())?;
    // 8080 when it is free; else any free port rather than failing.
    let listen = match listen {
        Some(at) => {
            if at
                .parse::<std::net::SocketAddr>()
                .is_ok_and(|a| !a.ip().is_loopback())
            {
                eprintln!(
                    "warning: {at} is reachable from other machines and tokens cross plain HTTP in clear: put HTTPS in front (docs/server.md)"
                );
            }
            vec![at]
        }
        None => vec!["127.0.0.1:8080".to_string(), "127.0.0.1:0".to_string()],
    };
    dmv_server::serve(config, &listen, move |base| {
        match made {
        Some((token, secret)) => {
            eprintln!(
                "dmv serve: made an admin token ({}) for {} in {}; open this address to log in with it:",
                token.id,
                printable(&token.user),
                tokens_path.display()
            );
            eprintln!("dmv serve: {base}/login#token={secret}");
        }
        None => eprintln!(
            "dmv serve: log in at {base}/login with a token of {}; make one with `dmv tokens add --user NAME --access write`",
            tokens_path.display()
        ),
    }
    })?;
    Ok(0)
}
