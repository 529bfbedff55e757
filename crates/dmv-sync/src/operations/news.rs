//! Whether anything moved since the last sync: what a watcher asks every
//! few seconds, far cheaper than a sync (one listing of each remote's refs,
//! a path remote's served in this process), so that a file written on one
//! replica reaches the others in seconds rather than at the next timer.

use dmv_repo::ref_names::{branch_ref, remote_branch_ref};
use dmv_repo::Repository;

use crate::operations::named_remotes::find_remote;
use crate::operations::reach::{Reach, ReachBook};
use crate::operations::remote_spec::LocalServer;

/// Where `branch` moved to since this replica last synced: the configured
/// remotes whose `branch` is not where this replica last saw it (its
/// `refs/remotes/NAME/BRANCH`), and `NAME/BRANCH` for each offer a peer
/// left here that the branch does not hold yet. A remote that does not
/// answer is left out: the next sync says so. One that did not answer
/// last time is not asked: waiting `remote.timeout` for a stalled one
/// every few seconds would hold a watcher's commits back; the timed sync
/// tries it.
pub fn moved_since_last_sync(repo: &Repository, branch: &str) -> Vec<String> {
    let mut moved: Vec<String> = repo
        .pending_offers(branch)
        .unwrap_or_default()
        .into_iter()
        .map(|o| o.label)
        .collect();
    let book = ReachBook::load(repo);
    for name in repo.config.remotes.keys() {
        let Ok(mut remote) = find_remote(repo, name) else {
            continue;
        };
        if book.class(&remote.spec.url) == Reach::Unreachable {
            continue;
        }
        // A path remote is read by a thread of this process, not a child: this runs every few seconds.
        remote.spec.local_server = LocalServer::InProcess;
        let Ok(listed) = remote
            .connect_from(repo)
            .and_then(|mut connection| connection.list_refs())
        else {
            continue;
        };
        let there = listed
            .refs
            .iter()
            .find(|(r, _)| *r == branch_ref(branch))
            .map(|(_, id)| *id);
        let seen = repo
            .refs
            .get(&remote_branch_ref(name, branch))
            .ok()
            .flatten();
        if there.is_some() && there != seen {
            moved.push(name.clone());
        }
    }
    moved
}

/// Hears from one remote when its refs change, where it can tell: a DMV
/// server over HTTP holds a `WaitRefs` open until they do (or about
/// `remote.timeout` passed), on one kept-alive connection. A watcher then
/// asks [`moved_since_last_sync`] at once instead of every few seconds:
/// another replica's change arrives in about a second, and an idle
/// watcher sends one request every ~25 s instead of two connections'
/// worth every 5 s.
pub struct NewsListener {
    remote: Box<dyn crate::transport::remote::Remote>,
    seen: [u8; 32],
}

impl NewsListener {
    /// Connects to the remote `name`; None when it cannot tell (not a
    /// DMV server over HTTP, or one from before `WaitRefs`).
    pub fn connect(repo: &Repository, name: &str) -> crate::SyncResult<Option<NewsListener>> {
        let found = find_remote(repo, name)?;
        // Only a server over HTTP can hold a request open: the others are not even connected to.
        if !matches!(
            found.spec.transport,
            crate::operations::remote_spec::Transport::Http { .. }
        ) {
            return Ok(None);
        }
        let mut remote = found.connect_from(repo)?;
        Ok(remote
            .wait_for_refs(None)?
            .map(|seen| NewsListener { remote, seen }))
    }

    /// Waits until the remote's refs change or the wait runs out: whether
    /// they changed since the last answer (this replica's own push too).
    pub fn wait(&mut self) -> crate::SyncResult<bool> {
        let Some(now) = self.remote.wait_for_refs(Some(self.seen))? else {
            return Ok(false);
        };
        let changed = now != self.seen;
        self.seen = now;
        Ok(changed)
    }
}
