//! `dmv`: the command line. Parses arguments, calls the repo layer, prints.

mod add_patch;
mod admin;
mod bisectcmd;
mod completion;
mod demo;
mod diffstat;
mod hints;
mod import;
mod inspect;
mod keys;
mod locks;
mod log_graph;
mod mergecmd;
mod mount;
mod partial;
mod progress;
mod rebasecmd;
mod refcmds;
mod repo_args;
mod reviewcmds;
mod sync;
mod terminal;
mod textcmds;
mod tokens;
mod watch;
mod word_diff;
mod work;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "dmv",
    version,
    about = "Distributed Media Versioning: version control for large files and many files"
)]
struct Cli {
    /// Run as if started in this directory.
    #[arg(short = 'C', global = true, value_name = "PATH")]
    dir: Option<PathBuf>,
    /// Do not page log, show and diff through `less` (or core.pager) on a terminal.
    #[arg(short = 'P', long = "no-pager")]
    no_pager: bool,
    #[command(subcommand)]
    command: Command,
}

// Each command's arguments are built only when it runs (or for --help and
// completions of it): building all of them cost every command ~100 page faults.
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// Create an empty repository.
    Init(work::InitArgs),
    /// Show staged, unstaged and untracked changes.
    Status(work::StatusArgs),
    /// Stage files (new, modified or deleted) for the next commit.
    Add(work::AddArgs),
    /// Remove files from the working tree and the staging area.
    Rm(work::RmArgs),
    /// Move or rename a tracked file or directory.
    Mv(work::MvArgs),
    /// Record the staged changes as a new commit.
    Commit(work::CommitArgs),
    /// Restore working-tree files, or unstage them with --staged.
    Restore(work::RestoreArgs),
    /// Move HEAD (and the current branch) to another commit.
    Reset(work::ResetArgs),
    /// Commit the undoing of an earlier commit.
    Revert(work::RevertArgs),
    /// Write a commit's files as a tar archive (to a file, or standard output).
    Archive(inspect::ArchiveArgs),
    /// Put uncommitted changes aside (push), bring them back (pop, apply), list or drop them.
    Stash(work::StashArgs),
    /// Show or set a setting of this repository, or with --global of all yours.
    Config(admin::ConfigArgs),
    /// Delete untracked files (-n to list them, -f to delete).
    Clean(work::CleanArgs),
    /// List, create, delete or rename branches.
    Branch(work::BranchArgs),
    /// Switch to a branch.
    Switch(work::SwitchArgs),
    /// Switch to a branch or commit, or restore paths (`checkout -- PATH`).
    Checkout(work::CheckoutArgs),
    /// List, create or delete tags.
    Tag(work::TagArgs),
    /// Join another branch's history into the current branch (three-way: text files line by line, media per file).
    Merge(mergecmd::MergeArgs),
    /// Settle merge conflicts: take ours, theirs, or keep both versions.
    Resolve(mergecmd::ResolveArgs),
    /// Apply the change one commit made onto the current branch, as a new commit
    CherryPick(mergecmd::CherryPickArgs),
    /// Move the current branch's own commits onto another commit, one by one (-i: edit the plan)
    Rebase(rebasecmd::RebaseArgs),
    /// Find the commit that brought a change in, by halving the commits between a bad and a good one.
    Bisect(bisectcmd::BisectArgs),
    /// Show commit history.
    Log(inspect::LogArgs),
    /// Show a commit and what it changed.
    Show(inspect::ShowArgs),
    /// Show changes between commits, the staging area and the working tree.
    Diff(inspect::DiffArgs),
    /// Stream a file from a commit to stdout: `dmv cat REV:PATH`.
    Cat(inspect::CatArgs),
    /// List a tree: `dmv ls-tree [-r] REV[:PATH]`.
    LsTree(inspect::LsTreeArgs),
    /// List the files in the staging area (tracked), or the untracked, modified or deleted ones.
    LsFiles(inspect::LsFilesArgs),
    /// Show each line of a text file with the commit, author and date that last changed it.
    Blame(textcmds::BlameArgs),
    /// Print the lines of tracked files (or of a revision's files) that match a pattern.
    Grep(textcmds::GrepArgs),
    /// Name a commit after the nearest tag: TAG, or TAG-COUNT-gID with COUNT commits since.
    Describe(textcmds::DescribeArgs),
    /// Summarise history by author: each one's commit subjects, or with -s their counts.
    Shortlog(textcmds::ShortlogArgs),
    /// List the ids of the commits revisions reach, newest first (or count them).
    RevList(textcmds::RevListArgs),
    /// Create, move or delete refs, one at a time or as one transaction (--stdin).
    UpdateRef(refcmds::UpdateRefArgs),
    /// List refs and the ids they point to.
    ShowRef(refcmds::ShowRefArgs),
    /// Print the ids of revisions, the current branch (--abbrev-ref HEAD) or the top folder (--show-toplevel).
    RevParse(refcmds::RevParseArgs),
    /// Show the history of a ref (also of deleted ones).
    Reflog(refcmds::ReflogArgs),
    /// Verify the integrity of every reachable object (--full: every object in every pack; --repair: rebuild and fetch what is damaged).
    Fsck(admin::FsckArgs),
    /// Drop unreachable objects and merge small packs.
    Gc(admin::GcArgs),
    /// Repository size, dedup ratio, object and pack counts.
    Stats(admin::StatsArgs),
    /// Copy a repository (path, ssh:// or http(s)://) into a new directory.
    Clone(sync::CloneArgs),
    /// List, add or remove remotes.
    Remote(sync::RemoteArgs),
    /// This device's key, and the keys that open an encrypted remote.
    Keys(keys::KeysArgs),
    /// Download a remote's branches and tags (into refs/remotes/REMOTE/*).
    Fetch(sync::FetchArgs),
    /// Fetch, then merge the remote's branch into the current one.
    Pull(sync::PullArgs),
    /// Send branches to a remote (fast-forward only unless --force).
    Push(sync::PushArgs),
    /// Pull the current branch from a remote, then push it back if the merge is clean.
    Sync(sync::SyncArgs),
    /// Commit changes once they settle and, with --sync, keep every remote in step.
    Watch(watch::WatchArgs),
    /// Show a revision as a read-only folder (FUSE), reading data as it is read: `dmv mount [REV] DIR`.
    #[command(
        override_usage = "dmv mount [--background] [REV] DIR\n       dmv mount [--background] --all DIR"
    )]
    Mount(mount::MountArgs),
    /// Unmount a folder `dmv mount` shows a revision in.
    Umount(mount::UmountArgs),
    /// Serve repositories over HTTP (`dmv serve [PATH…]`, or --config FILE), or on stdin/stdout (--stdio, for ssh).
    Serve(sync::ServeArgs),
    /// The login tokens of `dmv serve`: list, add (printed once), revoke.
    Tokens(tokens::TokensArgs),
    /// Show or change which files' data this replica keeps (full, meta, paths:GLOB, recent:N).
    Slice(partial::SliceArgs),
    /// List files with whether their data is here: `dmv ls [--absent|--present] [REV] [PATH…]`.
    ///
    /// present: the data is here (for the checked-out commit, the file is in the working tree too);
    /// absent: the data is elsewhere (`dmv get` fetches it, `dmv whereis` says where); stored: the
    /// data is here but the file is not in the working tree (a diff or an archive fetched it;
    /// `dmv get` writes it without a fetch).
    Ls(partial::LsArgs),
    /// Fetch the data of files this replica lacks and write them into the working tree.
    Get(partial::GetArgs),
    /// List, per file, the replicas known to hold its data (asking the reachable remotes live).
    ///
    /// Each line: a replica's id, the name it is known by here (the remote
    /// reaching it, else the name it gave itself, else the URL it was last
    /// seen at; `?` when none is known) and, in brackets, how far it is:
    /// near (answered quickly and sent data fast), far (answered, but
    /// slowly or sent data slowly), unknown (never asked from here: the
    /// location log, which replicas pass on, says it holds the data),
    /// unreachable (did not answer when last asked), with the measures
    /// that decided it. `get` asks the nearest first.
    Whereis(partial::WhereisArgs),
    /// Show this replica's id and name; name it, publish URLs it can be reached at, declare it metered.
    Replica(partial::ReplicaArgs),
    /// Free the data of files here (or on a remote) once enough other copies are confirmed.
    Drop(partial::DropArgs),
    /// Bring another tool's history in: `dmv import git PATH`.
    Import(import::ImportArgs),
    /// Lock paths on the remote (for every branch) so nobody else can commit or push changes to them.
    Lock(locks::LockArgs),
    /// Start editing files others must not change meanwhile: lock them and make them writable (Perforce's `p4 edit`).
    Edit(locks::LockArgs),
    /// Release locks you hold (or, as an admin, break others' with --force).
    Unlock(locks::UnlockArgs),
    /// List the locks the remote holds (who, from which replica, since when).
    Locks(locks::LocksArgs),
    /// Comment on a version of a file: a region of a photo, a moment of a film, lines of a text.
    Comment(reviewcmds::CommentArgs),
    /// Propose a branch for another, approve it, land it.
    Review(reviewcmds::ReviewArgs),
    /// Who pushed, locked, unlocked, uploaded and dropped what and when, on the hub here.
    Audit(locks::AuditArgs),
    /// Run DMV end to end on generated sample media in a temporary folder.
    Demo(demo::DemoArgs),
    /// Print the completion script of a shell: `dmv completions bash > ~/.local/share/bash-completion/completions/dmv`.
    Completions { shell: clap_complete::Shell },
    /// For completion scripts: the branch, tag and remote names here, one a line.
    #[command(name = "__complete", hide = true)]
    Complete { what: String },
    /// Write man pages (dmv.1 and dmv-COMMAND.1 for each command) into a folder, or with --install where `man` finds them.
    Manpages {
        /// The folder to write them into.
        #[arg(required_unless_present = "install", conflicts_with = "install")]
        folder: Option<PathBuf>,
        /// Into $XDG_DATA_HOME/man/man1 (~/.local/share/man/man1), which `man dmv-log` reads when ~/.local/bin is on PATH.
        #[arg(long)]
        install: bool,
    },
}

fn main() -> ExitCode {
    let args = match expand_aliases(std::env::args_os().collect()) {
        Ok(Expanded::Args(args)) => args,
        Ok(Expanded::Ran(code)) => return ExitCode::from(code),
        Err(e) => {
            eprintln!("dmv: {e}");
            return ExitCode::from(128);
        }
    };
    let cli = match Cli::try_parse_from(count_shorthand(args)) {
        Ok(cli) => cli,
        Err(e) => {
            print_usage_error(&e);
            // Git's status for a command used wrongly is 129; --help and --version are not errors.
            return ExitCode::from(if e.use_stderr() { 129 } else { 0 });
        }
    };
    if cli.no_pager {
        terminal::forbid_pager();
    }
    // This program is `dmv`: a path remote's server side gets its own process, as `git upload-pack` does.
    dmv_sync::LocalServer::ChildProcess.make_default();
    // Like git: `dmv log | head` ends quietly when the reader goes away. SIGPIPE
    // stays ignored (as Rust starts) in every command, since any may reach a
    // peer (a partial replica fetches what a command reads) and a peer that
    // goes away must be reported, not end the process silently; only the
    // reader of stdout going away ends it as SIGPIPE would.
    terminal::end_quietly_when_stdout_goes();
    if let Some(dir) = &cli.dir {
        if let Err(e) = std::env::set_current_dir(dir) {
            eprintln!("dmv: cannot change to {}: {e}", dir.display());
            return ExitCode::from(128);
        }
    }
    // Inside a worktree mount, which hides its replica's `.dmv`: as if
    // started at the same place in the replica it shows.
    if let Some(inside) = std::env::current_dir()
        .ok()
        .and_then(|d| dmv_mount::in_replica_behind(&d))
    {
        // A folder whose files are all absent is not on disk yet: made, as
        // the mount makes it when something is written there.
        let entered =
            std::fs::create_dir_all(&inside).and_then(|()| std::env::set_current_dir(&inside));
        if let Err(e) = entered {
            eprintln!("dmv: cannot change to {}: {e}", inside.display());
            return ExitCode::from(128);
        }
    }
    let result = match cli.command {
        Command::Init(a) => work::init(a),
        Command::Status(a) => work::status(a),
        Command::Add(a) => work::add(a),
        Command::Rm(a) => work::rm(a),
        Command::Mv(a) => work::mv(a),
        Command::Commit(a) => work::commit(a),
        Command::Restore(a) => work::restore(a),
        Command::Reset(a) => work::reset(a),
        Command::Revert(a) => work::revert(a),
        Command::Archive(a) => inspect::archive(a),
        Command::Stash(a) => work::stash(a),
        Command::Config(a) => admin::config(a),
        Command::Clean(a) => work::clean(a),
        Command::Branch(a) => work::branch(a),
        Command::Switch(a) => work::switch(a),
        Command::Checkout(a) => work::checkout(a),
        Command::Tag(a) => work::tag(a),
        Command::Merge(a) => mergecmd::merge(a),
        Command::Resolve(a) => mergecmd::resolve(a),
        Command::CherryPick(a) => mergecmd::cherry_pick(a),
        Command::Rebase(a) => rebasecmd::rebase(a),
        Command::Bisect(a) => bisectcmd::bisect(a),
        Command::Log(a) => inspect::log(a),
        Command::Show(a) => inspect::show(a),
        Command::Diff(a) => inspect::diff(a),
        Command::Cat(a) => inspect::cat(a),
        Command::LsTree(a) => inspect::ls_tree(a),
        Command::LsFiles(a) => inspect::ls_files(a),
        Command::Blame(a) => textcmds::blame(a),
        Command::Grep(a) => textcmds::grep(a),
        Command::Describe(a) => textcmds::describe(a),
        Command::Shortlog(a) => textcmds::shortlog(a),
        Command::RevList(a) => textcmds::rev_list(a),
        Command::UpdateRef(a) => refcmds::update_ref(a),
        Command::ShowRef(a) => refcmds::show_ref(a),
        Command::RevParse(a) => refcmds::rev_parse(a),
        Command::Reflog(a) => refcmds::reflog(a),
        Command::Fsck(a) => admin::fsck(a),
        Command::Gc(a) => admin::gc(a),
        Command::Stats(a) => admin::stats(a),
        Command::Clone(a) => sync::clone(a),
        Command::Remote(a) => sync::remote(a),
        Command::Keys(a) => keys::keys(a),
        Command::Fetch(a) => sync::fetch(a),
        Command::Pull(a) => sync::pull(a),
        Command::Push(a) => sync::push(a),
        Command::Sync(a) => sync::sync(a),
        Command::Watch(a) => watch::watch(a),
        Command::Mount(a) => mount::mount(a),
        Command::Umount(a) => mount::umount(a),
        Command::Serve(a) => sync::serve(a),
        Command::Tokens(a) => tokens::tokens(a),
        Command::Slice(a) => partial::slice(a),
        Command::Ls(a) => partial::ls(a),
        Command::Get(a) => partial::get(a),
        Command::Whereis(a) => partial::whereis(a),
        Command::Replica(a) => partial::replica(a),
        Command::Drop(a) => partial::drop(a),
        Command::Import(a) => import::import(a),
        Command::Lock(a) => locks::lock(a),
        Command::Edit(a) => locks::edit(a),
        Command::Unlock(a) => locks::unlock(a),
        Command::Locks(a) => locks::locks(a),
        Command::Comment(a) => reviewcmds::comment(a),
        Command::Review(a) => reviewcmds::review(a),
        Command::Audit(a) => locks::audit(a),
        Command::Demo(a) => demo::run(a),
        Command::Completions { shell } => completion::print_script(shell, Cli::command()),
        Command::Complete { what } => completion::complete_names(&what),
        Command::Manpages { folder, install } => match (folder, install) {
            (Some(folder), _) => write_manpages(&folder),
            (None, _) => install_manpages(),
        },
    };
    if std::env::var_os("DMV_TRACE").is_some() {
        eprintln!(
            "trace: content-files-opened {}",
            dmv_repo::store::trace::content_files_opened()
        );
        eprintln!(
            "trace: bytes-sent {} bytes-received {}",
            dmv_sync::trace::bytes_sent(),
            dmv_sync::trace::bytes_received()
        );
        // This program's own high-water mark (VmHWM): wait4's figure also
        // counts the parent's memory the child shared before it exec'd.
        if let Some(kib) = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("VmHWM:")?
                        .trim()
                        .strip_suffix(" kB")?
                        .parse::<u64>()
                        .ok()
                })
            })
        {
            eprintln!("trace: peak-rss-kib {kib}");
        }
    }
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Broken pipe (e.g. `dmv cat FILE | head`) is not an error worth
            // reporting when it is stdout's; a peer's is reported.
            if terminal::stdout_reader_gone()
                && e.chain().any(|c| {
                    c.downcast_ref::<std::io::Error>()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
                })
            {
                terminal::end_as_sigpipe();
            }
            // A cause already spelled out by the message above it is not repeated.
            let mut msg: Vec<String> = Vec::new();
            for cause in e.chain().map(|c| c.to_string()) {
                if !msg.last().is_some_and(|m| m.contains(&cause)) {
                    msg.push(cause);
                }
            }
            // A server's hook speaks in lines of its own, `remote: …`,
            // printed before the error as git prints them.
            let joined = msg.join(": ");
            let mut said = Vec::new();
            for l in joined.split('\n').skip(1) {
                match l.starts_with("remote: ") {
                    true => eprintln!("{}", repo_args::printable(l)),
                    false => said.push(l),
                }
            }
            let first = joined.split('\n').next().unwrap_or_default();
            said.insert(0, first);
            let mut line = repo_args::printable(&said.join(" "));
            line.truncate(line.trim_end().len());
            if let Some(hint) = hints::hint(&e) {
                line.push_str(&repo_args::printable(&hint));
            }
            if let Some(mount) = dmv_sync::full_file_system(e.chain()) {
                line.push_str(&format!(" (the file system mounted at {} is full: free some space there and run the command again)", mount.display()));
            }
            eprintln!("dmv: {line}");
            ExitCode::from(128)
        }
    }
}

/// Man pages made from the same definition as `--help`.
fn write_manpages(dir: &std::path::Path) -> anyhow::Result<u8> {
    std::fs::create_dir_all(dir)?;
    let write = |name: &str, cmd: clap::Command| -> anyhow::Result<()> {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        std::fs::write(dir.join(format!("{name}.1")), page)?;
        Ok(())
    };
    let dmv = Cli::command();
    for sub in dmv.get_subcommands() {
        let name = format!("dmv-{}", sub.get_name());
        write(&name, sub.clone().name(name.clone()))?;
    }
    write("dmv", dmv)?;
    Ok(0)
}

/// `manpages --install`: the pages in the user's own man folder
/// ($XDG_DATA_HOME/man/man1, default ~/.local/share/man/man1), which man-db
/// searches without MANPATH when ~/.local/bin is on PATH.
fn install_manpages() -> anyhow::Result<u8> {
    let data = match std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(h) => PathBuf::from(h).join(".local/share"),
            None => anyhow::bail!(
                "neither XDG_DATA_HOME nor HOME is set: give the folder, `dmv manpages DIR`"
            ),
        },
    };
    let dir = data.join("man/man1");
    write_manpages(&dir)?;
    println!("man pages written to {}", dir.display());
    Ok(0)
}

/// Where the command word is: the first argument that is not an option
/// (nor -C's folder).
fn command_word(args: &[std::ffi::OsString]) -> usize {
    let mut i = 1;
    while i < args.len() && args[i].to_str().is_some_and(|a| a.starts_with('-')) {
        i += if args[i] == "-C" { 2 } else { 1 };
    }
    i
}

/// What the command line became once aliases were replaced.
enum Expanded {
    Args(Vec<std::ffi::OsString>),
    /// A shell alias (`!…`) ran, with this exit status.
    Ran(u8),
}

/// Aliases expanded one inside another, at most (git stops at a loop too).
const MOST_ALIAS_EXPANSIONS: usize = 16;

/// `alias.NAME`, as git's: a command word that is no command of ours is
/// looked up in the repository's settings, then the global ones, and
/// replaced by the alias's words (split as a shell would); an alias that
/// begins with `!` is a shell command, run from the top folder with the
/// rest of the arguments.
fn expand_aliases(mut args: Vec<std::ffi::OsString>) -> anyhow::Result<Expanded> {
    let mut seen: Vec<String> = Vec::new();
    loop {
        let i = command_word(&args);
        let Some(word) = args.get(i).and_then(|w| w.to_str()).map(str::to_string) else {
            return Ok(Expanded::Args(args));
        };
        if word == "help" || Cli::command().find_subcommand(&word).is_some() {
            return Ok(Expanded::Args(args));
        }
        let dir = match args.iter().position(|a| a == "-C") {
            Some(c) if c < i => std::path::PathBuf::from(&args[c + 1]),
            _ => std::path::PathBuf::from("."),
        };
        let repo = dmv_repo::Repository::discover(&dir).ok();
        let value = match &repo {
            Some(r) => r.alias(&word)?,
            None => dmv_repo::GlobalSettings::load()?.get(&format!("alias.{word}")),
        };
        let Some(value) = value else {
            return Ok(Expanded::Args(args));
        };
        if seen.contains(&word) || seen.len() >= MOST_ALIAS_EXPANSIONS {
            anyhow::bail!("alias loop: {} -> {word}", seen.join(" -> "));
        }
        seen.push(word.clone());
        if let Some(shell) = value.strip_prefix('!') {
            let top = repo
                .as_ref()
                .filter(|r| r.require_worktree().is_ok())
                .map_or(dir, |r| r.root.clone());
            let status = std::process::Command::new("sh")
                .current_dir(top)
                .arg("-c")
                .arg(format!("{shell} \"$@\""))
                .arg(shell)
                .args(&args[i + 1..])
                .status()
                .map_err(|e| anyhow::anyhow!("alias.{word}: cannot run sh: {e}"))?;
            return Ok(Expanded::Ran(
                status.code().map_or(128, |c| c.clamp(0, 255) as u8),
            ));
        }
        let words = shlex::split(&value)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| anyhow::anyhow!("alias.{word} = {value}: its quotes do not pair"))?;
        args.splice(i..=i, words.into_iter().map(std::ffi::OsString::from));
    }
}

/// A command used wrongly, said as git says it: the one thing wrong, a
/// suggestion only when clap has a close one, and the command's usage;
/// not clap's tip to pass a mistyped option as a value.
fn print_usage_error(e: &clap::Error) {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        let _ = e.print();
        return;
    }
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    };
    let arg = text(ContextKind::InvalidArg).unwrap_or_default();
    eprintln!("error: unknown option '{arg}'");
    // Only a suggestion that shares the mistyped option's start: clap offered `--before` for `--decorate`.
    if let Some(close) = text(ContextKind::SuggestedArg) {
        let stem = arg.trim_start_matches('-');
        if stem.len() >= 2 && close.trim_start_matches('-').starts_with(&stem[..2]) {
            eprintln!("  (did you mean '{close}'?)");
        }
    }
    if let Some(ContextValue::StyledStr(usage)) = e.get(ContextKind::Usage) {
        eprintln!(
            "{}",
            usage.to_string().trim_end().replacen("Usage:", "usage:", 1)
        );
    }
}

/// `dmv log -3` as git takes it: `-N` after `log` (or `reflog`) is `--max-count=N`.
fn count_shorthand(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let i = command_word(&args);
    if args.get(i).is_none_or(|a| a != "log" && a != "reflog") {
        return args;
    }
    let log = i;
    for arg in args.iter_mut().skip(log + 1).take_while(|a| *a != "--") {
        let count = arg
            .to_str()
            .and_then(|a| a.strip_prefix('-'))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_string);
        if let Some(n) = count {
            *arg = format!("--max-count={n}").into();
        }
    }
    args
}
