//! The dmv command that deals with an error, said after the library's
//! message: the libraries say what went wrong in words any front end can
//! show, and only the command line knows its own commands. Matched on the
//! errors' types, never on their text.

use dmv_repo::store::StoreError;
use dmv_repo::{RepoError, Resolution};
use dmv_sync::AddressError;
use dmv_sync::BucketError;
use dmv_sync::TransportError;
use dmv_sync::{Refusal, SyncError, Violation};

/// What to append to the error's line, if a command helps.
pub fn hint(e: &anyhow::Error) -> Option<String> {
    e.chain().find_map(|cause| {
        if let Some(r) = cause.downcast_ref::<RepoError>() {
            repo(r)
        } else if let Some(s) = cause.downcast_ref::<SyncError>() {
            sync(s)
        } else {
            cause.downcast_ref::<StoreError>().and_then(store)
        }
    })
}

fn repo(e: &RepoError) -> Option<String> {
    Some(match e {
        RepoError::BranchNotMerged { name } => format!(" (`dmv branch -D {name}` deletes it anyway)"),
        RepoError::MergeInProgress { .. } | RepoError::MergeAlreadyInProgress { .. } | RepoError::MergeInterrupted { .. } | RepoError::HeadMoved { .. } => {
            " (`dmv merge --abort` aborts it)".into()
        }
        RepoError::UnresolvedConflicts { .. } => "; settle them with `dmv resolve`, or edit a text file's conflict markers and `dmv add` it".into(),
        RepoError::DataAbsent { .. } => " (`dmv get` fetches it)".into(),
        RepoError::DropsNotAllowed { .. } => ": `dmv config drop.allowed true` there".into(),
        RepoError::RevertConflict { .. } => " (with `dmv restore --source`)".into(),
        RepoError::FileDirectoryClash { path, other, how } => {
            let flag = match how {
                Resolution::Ours => " --ours",
                Resolution::Theirs => " --theirs",
                Resolution::Both => " --both",
                Resolution::AsIs => "",
            };
            format!(", e.g. `dmv resolve{flag} {path} {other}`")
        }
        RepoError::MessageRequired => ": dmv commit -m MESSAGE".into(),
        RepoError::UnknownIdentity => {
            ": tell dmv who you are with `dmv config --global user.name \"Your Name\"` and \
             `dmv config --global user.email you@example.com`, then run the command again"
                .into()
        }
        RepoError::NotFastForward { .. } => " (`dmv merge` without --ff-only joins them)".into(),
        RepoError::LockHeldByOther { .. } => " (`dmv unlock --force`)".into(),
        RepoError::FoldedNames { .. } | RepoError::UnfitName { .. } => " (`dmv mv`)".into(),
        RepoError::Corrupt { path, .. } if path.ends_with("REBASE_STATE") => {
            " (`dmv rebase --abort`)".into()
        }
        RepoError::BranchOfSeveralRemotes { name, remotes } => format!(", as in dmv switch -c {name} {}", remotes.first()?),
        RepoError::IsAFolder { .. } => "; dmv ls-tree REV:PATH lists a folder".into(),
        RepoError::Corrupt { path, .. } if path.ends_with("dirstate") => " (`dmv fsck --repair` rebuilds it from HEAD)".into(),
        RepoError::Corrupt { path, .. } if path.ends_with("MERGE_STATE") => " (`dmv merge --abort`)".into(),
        RepoError::Store(s) => return store(s),
        _ => return None,
    })
}

fn sync(e: &SyncError) -> Option<String> {
    Some(match e {
        SyncError::Address(AddressError::NoSuchRemote { name }) => {
            format!("; add one with `dmv remote add {name} URL`")
        }
        SyncError::Address(AddressError::NeedsNamedRemote { .. }) => {
            " (dmv remote add NAME URL)".into()
        }
        SyncError::NoRemoteReachable { tried, .. } if tried.is_empty() => {
            " (dmv remote add NAME URL)".into()
        }
        SyncError::Transport(TransportError::Stalled { .. }) => {
            " (`dmv config remote.timeout SECONDS` waits longer)".into()
        }
        SyncError::Transport(TransportError::TokenRefused { .. }) => {
            "; set DMV_TOKEN or `dmv remote add --token`".into()
        }
        SyncError::Refused(Refusal::DataHeldByNeither { .. }) => " (`dmv get` fetches data)".into(),
        SyncError::NotFastForward { .. } => " (`dmv pull`, or `dmv push --force`)".into(),
        SyncError::NotEnoughCopies { .. } | SyncError::Refused(Refusal::NoCopiesToConfirm) => {
            " (`dmv drop --force`)".into()
        }
        SyncError::Refused(Refusal::BreakingLocksNeedsAdmin) => " (`dmv unlock --force`)".into(),
        SyncError::Refused(Refusal::UnwantedTakesNoSelection) => {
            " (`dmv drop --unwanted` alone)".into()
        }
        SyncError::Bucket(BucketError::Locked { .. }) => {
            "; on a device that opens it, `dmv keys add --recipient KEY` with the KEY `dmv keys device` prints here, or give its passphrase in DMV_PASSPHRASE (a clone on a terminal asks for it)".into()
        }
        SyncError::Bucket(BucketError::NoSuchKey { .. }) => " (`dmv keys list`)".into(),
        SyncError::Protocol(v) => return violation(v),
        SyncError::Repo(r) => return repo(r),
        SyncError::Store(s) => return store(s),
        SyncError::CloneStopped { cause, .. } => return sync(cause),
        _ => return None,
    })
}

fn violation(v: &Violation) -> Option<String> {
    match v {
        Violation::Damaged { .. } => Some("; run `dmv fsck` there".into()),
        Violation::At { violation, .. } => self::violation(violation),
        _ => None,
    }
}

fn store(e: &StoreError) -> Option<String> {
    match e {
        StoreError::CorruptFile { path, .. } if path.extension().is_some_and(|x| x == "idx") => {
            Some(" (`dmv fsck --repair` rebuilds it)".into())
        }
        _ => None,
    }
}
