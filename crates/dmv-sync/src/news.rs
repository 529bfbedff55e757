//! Whether anything moved since the last sync: what a watcher asks every
//! few seconds, far cheaper than a sync (one listing of each remote's refs,
//! a path remote's served in this process), so that a file written on one
//! replica reaches the others in seconds rather than at the next timer.

use dmv_repo::ref_names::{branch_ref, remote_branch_ref};
use dmv_repo::Repository;

use crate::named_remotes::find_remote;
use crate::peers::pending_offers;
use crate::reach::{Reach, ReachBook};
use crate::remote_spec::LocalServer;

/// Where `branch` moved to since this replica last synced: the configured
/// remotes whose `branch` is not where this replica last saw it (its
/// `refs/remotes/NAME/BRANCH`), and `NAME/BRANCH` for each offer a peer
/// left here that the branch does not hold yet. A remote that does not
/// answer is left out: the next sync says so. One that did not answer
/// last time is not asked: waiting `remote.timeout` for a stalled one
/// every few seconds would hold a watcher's commits back; the timed sync
/// tries it.
pub fn moved_since_last_sync(repo: &Repository, branch: &str) -> Vec<String> {
    let mut moved: Vec<String> = pending_offers(repo, branch).unwrap_or_default().into_iter().map(|(name, _)| name).collect();
    let book = ReachBook::load(repo);
    for name in repo.config.remotes.keys() {
        let Ok(mut remote) = find_remote(repo, name) else { continue };
        if book.class(&remote.spec.url) == Reach::Unreachable {
            continue;
        }
        // A path remote is read by a thread of this process, not a child: this runs every few seconds.
        remote.spec.local_server = LocalServer::InProcess;
        let Ok(listed) = remote.connect_from(repo).and_then(|mut connection| connection.list_refs()) else { continue };
        let there = listed.refs.iter().find(|(r, _)| *r == branch_ref(branch)).map(|(_, id)| *id);
        let seen = repo.refs.get(&remote_branch_ref(name, branch)).ok().flatten();
        if there.is_some() && there != seen {
            moved.push(name.clone());
        }
    }
    moved
}
