//! Location tracking across replicas: what a transfer teaches about who
//! holds which file's data, and the exchange of location logs with a remote
//! (they merge without conflict, so both directions are a plain merge).

use dmv_repo::store::ObjectId;
use dmv_repo::{now_ns, LocationNews, LocationRecord, ReplicaId, Repository, Stamp};

use crate::protocol::location_run::LocationRun;
use crate::transport::remote::Remote;
use crate::SyncResult;

/// The remote's replica id, remembered with its URL (which names a configured remote).
pub fn remote_replica(repo: &Repository, remote: &mut dyn Remote) -> SyncResult<ReplicaId> {
    let (id, _) = remote.replica()?;
    repo.copies().remember_replica(id, remote.url())?;
    Ok(id)
}

/// Records that the remote holds these files' data (it sent or received
/// them), and this replica too when `here` (those it still holds: a drop
/// here may have freed some meanwhile).
/// `files` is left sorted, each once.
pub(crate) fn record_transfer(
    repo: &Repository,
    remote: ReplicaId,
    files: &mut Vec<ObjectId>,
    here: bool,
) -> SyncResult<()> {
    if files.is_empty() {
        return Ok(());
    }
    files.sort_unstable();
    files.dedup();
    let remote_records = match remote != repo.copies().replica_id()? {
        true => {
            let stamp = Stamp {
                time_ns: now_ns(),
                present: true,
            };
            files
                .iter()
                .map(|key| LocationRecord {
                    key: *key,
                    replica: remote,
                    stamp,
                })
                .collect()
        }
        false => Vec::new(),
    };
    match here {
        true => repo.copies().record_held_here(files, remote_records)?,
        false if !remote_records.is_empty() => repo.copies().note_locations(remote_records)?,
        false => {}
    }
    Ok(())
}

/// Takes in the remote's location log, and with `send_back` gives it ours
/// (everything both know). Returns how many records changed here.
pub fn exchange_locations(
    repo: &Repository,
    remote: &mut dyn Remote,
    send_back: bool,
) -> SyncResult<usize> {
    let (changed, _, _) = take_locations(repo, remote)?;
    if send_back {
        remote.put_locations(repo.copies().replica_id()?, repo.copies().location_pages()?)?;
    }
    Ok(changed)
}

/// Takes in the remote's location log: how many records changed here,
/// what this log knows that the remote's did not, and the trees the
/// remote's log claims (of those asked for). None of the news when the
/// log came as several runs (a bucket's, one per replica): what the whole
/// lacks is not known from one of them.
fn take_locations(
    repo: &Repository,
    remote: &mut dyn Remote,
) -> SyncResult<(usize, Option<LocationNews>, Vec<ObjectId>)> {
    let mut run = LocationRun::new(repo)?;
    let mut changed = 0;
    let mut runs = 1;
    let trees = repo
        .copies()
        .trees_to_ask_claims_of(crate::protocol::MAX_TREES_PER_CLAIMS_REQUEST)?;
    // Claims come from a server's log, which is one run: they go with the last.
    run.claims = remote.get_locations_claiming(&trees, &mut |records, names| {
        let mut records = records.peekable();
        // Pages in key order are one run, merged in one pass; a page that starts over (a bucket's logs, one per replica) starts a new one.
        if records
            .peek()
            .zip(run.last)
            .is_some_and(|(first, last)| first.order() <= last)
        {
            changed += std::mem::replace(&mut run, LocationRun::new(repo)?).merge(repo)?;
            runs += 1;
        }
        run.add(&mut records, names)
    })?;
    let mut claimed: Vec<ObjectId> = run.claims.iter().map(|claim| claim.tree).collect();
    claimed.dedup();
    let (last, news) = run.merge_with_news(repo)?;
    Ok((changed + last, (runs == 1).then_some(news), claimed))
}

/// Whether this replica takes other replicas' location logs only when it
/// needs them (`whereis`, a `get` no configured remote can serve), not with
/// every clone, fetch and push: a working copy with a partial slice, a
/// phone's. A log is ~57 bytes a file per replica holding it: 11 MB at
/// 100,000 files on a hub and a laptop, where the commits and trees of a
/// meta clone are 3 MB. A bare repository is where logs meet: it takes them.
pub(crate) fn takes_logs_lazily(repo: &Repository) -> bool {
    !repo.config.slice.is_full() && !repo.config.bare
}

/// The exchange a push or offer ends with: [`exchange_locations`],
/// except that what is given back is only what the remote's log lacked
/// when that is known (a server's log, one run) and the remote takes
/// pieces of logs (a push's whole log was ~250 KB at 1,100 files and
/// four replicas, every push); and a replica taking logs lazily only
/// gives its own (when `send_back`), and takes nothing.
pub(crate) fn share_locations(
    repo: &Repository,
    remote: &mut dyn Remote,
    send_back: bool,
) -> SyncResult<usize> {
    if !takes_logs_lazily(repo) {
        let (changed, news, claimed) = take_locations(repo, remote)?;
        if !send_back {
            return Ok(changed);
        }
        let me = repo.copies().replica_id()?;
        let records = match news.filter(|n| remote.takes_pieces_of_logs() && !n.overflowed) {
            Some(news) if news.records.is_empty() => return Ok(changed),
            Some(news) => Some(news.records),
            None => None,
        };
        give_log(repo, remote, me, records, &claimed)?;
        return Ok(changed);
    }
    if send_back {
        give_log(repo, remote, repo.copies().replica_id()?, None, &[])?;
    }
    Ok(0)
}

/// More records than this are worth one more request: the remote's
/// tips, whose trees the whole log may give as claims.
const RECORDS_WORTH_CLAIMS: u64 = 1024;

/// Gives the remote `records` (news of this log), or the whole log when
/// `None`; either way, past [`RECORDS_WORTH_CLAIMS`], the whole log
/// instead if it is fewer records once its claims of the remote's tips'
/// trees and of `remote_claims` (trees the remote's log claims) go as
/// they are. A clone of 100,000 files from a hub that two replicas fill
/// sent back 300,000 records (17 MB, which the hub then read and merged):
/// as claims, three. A phone's few records go as they are, with no
/// request more.
fn give_log(
    repo: &Repository,
    remote: &mut dyn Remote,
    me: ReplicaId,
    records: Option<Vec<LocationRecord>>,
    remote_claims: &[ObjectId],
) -> SyncResult<()> {
    let pages = match records {
        Some(records) => repo.copies().location_pages_of(records)?,
        None => repo.copies().location_pages()?,
    };
    if pages.records_left() > RECORDS_WORTH_CLAIMS && remote.takes_pieces_of_logs() {
        let mut trees = tip_trees(repo, remote)?;
        for tree in remote_claims {
            if trees.len() < crate::protocol::MAX_TREES_PER_CLAIMS_REQUEST && !trees.contains(tree)
            {
                trees.push(*tree);
            }
        }
        let claimed = repo.copies().location_pages_claiming(&trees)?;
        if !claimed.claims().is_empty()
            && claimed.records_left() < pages.records_left()
            && remote.put_location_claims(me, claimed)?
        {
            return Ok(());
        }
    }
    remote.put_locations(me, pages)
}

/// The root trees of the remote's HEAD and ref tips that are here: what a
/// server reads whole, and so takes claims of.
fn tip_trees(repo: &Repository, remote: &mut dyn Remote) -> SyncResult<Vec<ObjectId>> {
    let mut trees: Vec<ObjectId> = Vec::new();
    for (_, tip) in remote.list_refs()?.refs {
        if let Ok(commit) = repo.commit(&tip) {
            if !trees.contains(&commit.tree) {
                trees.push(commit.tree);
            }
        }
        if trees.len() == crate::protocol::MAX_TREES_PER_CLAIMS_REQUEST {
            break;
        }
    }
    Ok(trees)
}

/// The exchange a fetch ends with, `files`' data having arrived from the
/// remote: takes the remote's log (unless this replica takes logs lazily)
/// and gives back what it lacked: this replica's new copies, and what was
/// heard from elsewhere (a third replica's drop, which the remote could
/// not learn otherwise until a push). The giving is best effort: a
/// caller that may only read is refused, and the data here is whole
/// either way. The last request of a fetch, so a refusal spoils nothing.
pub(crate) fn share_locations_after_fetch(
    repo: &Repository,
    remote: &mut dyn Remote,
    files: &[ObjectId],
) -> SyncResult<usize> {
    if takes_logs_lazily(repo) {
        tell_of_new_copies(repo, remote, files);
        return Ok(0);
    }
    let (changed, news, claimed) = take_locations(repo, remote)?;
    let Some(news) = news.filter(|_| remote.takes_pieces_of_logs()) else {
        tell_of_new_copies(repo, remote, files);
        return Ok(changed);
    };
    let me = repo.copies().replica_id()?;
    let records = match news.overflowed {
        true => None,
        false => {
            let stamp = Stamp {
                time_ns: now_ns(),
                present: true,
            };
            let mut records = news.records;
            records.extend(files.iter().map(|key| LocationRecord {
                key: *key,
                replica: me,
                stamp,
            }));
            if records.is_empty() {
                return Ok(changed);
            }
            Some(records)
        }
    };
    let _ = give_log(repo, remote, me, records, &claimed);
    Ok(changed)
}

/// After `files`' data arrived from the remote: tells it this replica holds
/// them now, as this replica learnt of its copy (the records alone, not the
/// whole log a push exchanges, unless past 1,024 records the log with its
/// claims says it in fewer). Best effort: a caller that may only read is
/// refused, and the remote learns at the next exchange it can take; the data
/// here is whole either way.
pub(crate) fn tell_of_new_copies(repo: &Repository, remote: &mut dyn Remote, files: &[ObjectId]) {
    tell_of_copies(repo, remote, files, true);
}

/// Tells a remote that confirmed copies for a drop here that this replica
/// holds `files` no longer, as it told itself: the news reaches at once
/// those it spoke with, and goes on from them with every exchange. Best
/// effort, as [`tell_of_new_copies`].
pub(crate) fn tell_of_drop(repo: &Repository, remote: &mut dyn Remote, files: &[ObjectId]) {
    tell_of_copies(repo, remote, files, false);
}

fn tell_of_copies(repo: &Repository, remote: &mut dyn Remote, files: &[ObjectId], present: bool) {
    let _ = tell_of_records(repo, remote, copy_records(repo, files, present));
}

/// Records saying this replica holds `files` from now on (or, not
/// `present`, no longer), stamped now: told later (see
/// [`tell_of_records`]), a drop here after them, stamped later, still
/// wins wherever both arrive. Empty when this replica has no id.
pub(crate) fn copy_records(
    repo: &Repository,
    files: &[ObjectId],
    present: bool,
) -> Vec<LocationRecord> {
    let Ok(me) = repo.copies().replica_id() else {
        return Vec::new();
    };
    let stamp = Stamp {
        time_ns: now_ns(),
        present,
    };
    files
        .iter()
        .map(|key| LocationRecord {
            key: *key,
            replica: me,
            stamp,
        })
        .collect()
}

/// Gives a remote `records` of this replica's copies, as
/// [`tell_of_new_copies`] does. Best effort: false only when the remote
/// could not be asked (it failed, or its connection did), for a caller
/// that may ask again on another.
pub(crate) fn tell_of_records(
    repo: &Repository,
    remote: &mut dyn Remote,
    records: Vec<LocationRecord>,
) -> bool {
    if records.is_empty() || !remote.takes_pieces_of_logs() {
        return true;
    }
    let Ok(me) = repo.copies().replica_id() else {
        return true;
    };
    // Past RECORDS_WORTH_CLAIMS records, the whole log with its claims when
    // that is fewer, as a fetch gives it: a get of 100,000 files of a tree
    // the remote has sent 100,000 records (5.7 MB), which the remote then
    // merged one by one, where one claim says it.
    !matches!(give_log(repo, remote, me, Some(records), &[]), Err(e) if e.is_remote_failure())
}
