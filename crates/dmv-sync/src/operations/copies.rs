//! Copies of file data across replicas: `whereis` (who holds what, from the
//! location log and, live, from the remotes that answer) and `drop` (freeing
//! data here or on a remote only while enough other copies are confirmed,
//! live and locked, never by trusting the log).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use dmv_repo::store::ObjectId;
use dmv_repo::{ReplicaCard, ReplicaId, Repository};
use serde::Serialize;

use crate::operations::locations::{exchange_locations, remote_replica, tell_of_drop};
use crate::operations::named_remotes::find_remote;
use crate::operations::reach::{Reach, ReachBook, Seen};
use crate::transport::remote::Remote;
use crate::AddressError;
use crate::{Refusal, SyncError, SyncResult};

/// Up to how many file versions `whereis` looks up one by one in the
/// trees the location log claims, rather than reading every claimed tree
/// whole (a lookup reads the folders along one path; a tree of 100,000
/// files is read whole in about 0.1 s).
const FEW_FILES: usize = 1000;

/// How long a drop keeps other replicas' copies locked at most (it unlocks them when done).
const LOCK_SECONDS: u64 = 600;

/// A drop frees data only while its locks have at least this long left: a
/// lock that expired before the drop lets its replica drop that copy too.
const LOCK_MARGIN_SECONDS: u64 = LOCK_SECONDS / 2;

/// Whether locks requested `elapsed` ago still outlast the drop by the margin.
fn locks_still_hold(elapsed: Duration) -> bool {
    elapsed < Duration::from_secs(LOCK_SECONDS - LOCK_MARGIN_SECONDS)
}

/// One replica's copy of a file's data.
#[derive(Clone, Debug, Serialize)]
pub struct CopyInfo {
    /// The replica's id.
    pub replica: String,
    /// The configured remote it is, or the URL it was last seen at.
    pub name: Option<String>,
    /// This replica.
    pub here: bool,
    /// Answered just now (and so confirmed, or not, live).
    pub reachable: bool,
    /// Its availability class, from what was seen of it now or last time.
    pub class: Reach,
    /// How long connecting to it took, when it last answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<u64>,
    /// How fast its last transfer of file data here went, in bytes a second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_sec: Option<u64>,
    /// The URLs it publishes (any replica may fetch from it there).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub published: Vec<String>,
    /// It declared itself metered: file data is not pulled from it unless asked for by name.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub metered: bool,
}

/// Where a file's data is.
#[derive(Clone, Debug, Serialize)]
pub struct FileCopies {
    /// The file's path in the repository (bytes; shown lossily as UTF-8).
    #[serde(serialize_with = "ser_path")]
    pub path: Vec<u8>,
    /// The file version's content id, in hex.
    pub id: String,
    /// The file's size, in bytes.
    pub size: u64,
    /// The replicas holding all its data, as the location log and the remotes
    /// that answered say: this one first if it does, then the others by id.
    pub copies: Vec<CopyInfo>,
}

fn ser_path<S: serde::Serializer>(p: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(p))
}

/// A configured remote that answered, with its replica id.
struct Reached {
    name: String,
    url: String,
    id: ReplicaId,
    remote: Box<dyn Remote>,
}

/// Connects to every configured remote that answers (the others are noted in
/// `unreachable`): one per replica, other than this one. Two names (or URLs)
/// for the same replica, or one for this replica itself, are one copy, and
/// a drop must not count it twice. How each answered goes in `book`.
fn reach_all(
    repo: &Repository,
    except: Option<&str>,
    book: &mut ReachBook,
    unreachable: &mut Vec<String>,
) -> SyncResult<Vec<Reached>> {
    let me = repo.copies().replica_id()?;
    let mut reached: Vec<Reached> = Vec::new();
    for name in repo
        .config
        .remotes
        .keys()
        .filter(|n| Some(n.as_str()) != except)
    {
        let spec = match find_remote(repo, name) {
            Ok(remote) => remote.spec,
            Err(e) => {
                unreachable.push(format!("{name} ({e})"));
                continue;
            }
        };
        match book
            .connect(&spec)
            .and_then(|mut remote| Ok((remote_replica(repo, remote.as_mut())?, remote)))
        {
            Ok((id, remote)) => {
                if id != me && reached.iter().all(|r| r.id != id) {
                    reached.push(Reached {
                        name: name.clone(),
                        url: spec.url,
                        id,
                        remote,
                    });
                }
            }
            Err(e)
                if e.is_remote_failure()
                    || matches!(e, SyncError::Address(AddressError::BadUrl { .. })) =>
            {
                book.failed(&spec.url, &e);
                unreachable.push(format!("{name} ({e})"));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(reached)
}

/// Per file of `tree` under `specs`, in path order: the replicas known to
/// hold its data, handed to `each` one file at a time. Every configured
/// remote that answers is asked live (and its location log taken in); the
/// others are known from the log only, and returned, each with why it could
/// not be asked (it did not answer, or stopped answering part way).
///
/// A phone's command: at 100,000 files it holds the files' names and ids,
/// and per file version the replicas holding it as small numbers, not a
/// decoded log nor every answer at once (115 MiB before, 0.65 s).
pub fn whereis(
    repo: &Repository,
    tree: &ObjectId,
    specs: &[Vec<u8>],
    each: &mut dyn FnMut(FileCopies) -> SyncResult<()>,
) -> SyncResult<Vec<String>> {
    let mut files: Vec<(Box<[u8]>, ObjectId, u64, bool)> = Vec::new();
    repo.copies().each_availability(tree, specs, &mut |f| {
        files.push((
            f.path.into_boxed_slice(),
            f.entry.id,
            f.entry.size,
            f.present,
        ));
        Ok(())
    })?;
    let mut ids: Vec<ObjectId> = files.iter().map(|f| f.1).collect();
    ids.sort_unstable();
    ids.dedup();
    // Each file by its version's place in `ids`: 32 bytes a file, not 64
    // (3 MB at 100,000 files, what reading the location log's claims takes).
    let mut files: Vec<(Box<[u8]>, u32, u64, bool)> = files
        .into_iter()
        .map(|(path, id, size, present)| {
            let at = ids.binary_search(&id).unwrap_or_default();
            (path, at as u32, size, present)
        })
        .collect();
    files.shrink_to_fit();
    let mut unreachable = Vec::new();
    let mut book = ReachBook::load(repo);
    let reached = reach_all(repo, None, &mut book, &mut unreachable);
    let answered =
        reached.and_then(|reached| ask_all(repo, reached, &ids, &mut book, &mut unreachable));
    book.save();
    // Replicas by number: the few that hold copies, however many files.
    let (reached, mut replicas, live) = answered?;
    // The holders the log records, as (version's place in `ids`, replica),
    // read record by record: in key order, so sorted by version. Flat, not
    // a list per version: 8 bytes a holder, not 56 a version.
    let me = repo.copies().replica_id()?;
    let mut logged: Vec<(u32, u32)> = Vec::new();
    let cards = if ids.len() <= FEW_FILES {
        // A few files are looked up in the claimed trees at their paths, and
        // this replica's own claims not read at all: listing the files of
        // each claimed tree took 4 MiB per tree of 100,000 files (a whereis
        // of one file there peaked at 25.7 MiB, today 19).
        let mut keys = BTreeMap::new();
        for (path, at, _, _) in &files {
            keys.entry(ids[*at as usize])
                .or_insert_with(|| path.to_vec());
        }
        let log = repo.copies().locations_of(&keys, |r, _| *r != me)?;
        for ((key, replica), stamp) in &log.records {
            if let (true, Ok(i)) = (stamp.present, ids.binary_search(key)) {
                logged.push((i as u32, replicas.number(*replica)));
            }
        }
        log.cards
    } else {
        repo.copies()
            .locations_where(|r| {
                if r.stamp.present && r.replica != me {
                    if let Ok(i) = ids.binary_search(&r.key) {
                        logged.push((i as u32, replicas.number(r.replica)));
                    }
                }
                false
            })?
            .cards
    };
    let urls: BTreeMap<String, String> = repo
        .config
        .remotes
        .iter()
        .flat_map(|(n, c)| c.urls().map(move |u| (u.to_string(), n.clone())))
        .collect();
    let known = repo.copies().known_replicas()?;
    // A remote's name here, else the name the replica gave itself, else the URL it was reached at.
    let name_of = |id: &ReplicaId| -> Option<String> {
        if let Some(r) = reached.iter().find(|r| r.id == *id) {
            return Some(r.name.clone());
        }
        let url = known.get(id);
        if let Some(remote) = url.and_then(|u| urls.get(u)) {
            return Some(remote.clone());
        }
        cards
            .get(id)
            .map(|(_, c)| c.name.clone())
            .or_else(|| url.cloned())
    };
    // What was seen of it, now or last time, where it was reached (or at a URL it publishes).
    let seen_of = |id: &ReplicaId| -> Option<&Seen> {
        let url = reached
            .iter()
            .find(|r| r.id == *id)
            .map(|r| &r.url)
            .or_else(|| known.get(id));
        let published = cards.get(id).into_iter().flat_map(|(_, c)| &c.urls);
        url.into_iter().chain(published).find_map(|u| book.seen(u))
    };
    let card_of = |id: &ReplicaId| cards.get(id).map(|(_, c)| c.clone()).unwrap_or_default();
    let shown: Vec<(String, Option<String>, Option<&Seen>, ReplicaCard)> = replicas
        .ids
        .iter()
        .map(|id| (id.to_string(), name_of(id), seen_of(id), card_of(id)))
        .collect();
    let me_shown = (me.to_string(), Some(repo.copies().replica_name()));
    for (path, at, size, present) in files {
        let (at, id) = (at as usize, ids[at as usize]);
        let from = logged.partition_point(|(i, _)| (*i as usize) < at);
        let mut holders: BTreeSet<u32> = logged[from..]
            .iter()
            .take_while(|(i, _)| *i as usize == at)
            .map(|(_, n)| *n)
            .collect();
        for (n, answers) in &live {
            match answers[at] {
                true => holders.insert(*n),
                false => holders.remove(n),
            };
        }
        let mut copies = Vec::new();
        if present {
            copies.push(CopyInfo {
                replica: me_shown.0.clone(),
                name: me_shown.1.clone(),
                here: true,
                reachable: true,
                class: Reach::Here,
                connect_ms: None,
                bytes_per_sec: None,
                published: Vec::new(),
                metered: false,
            });
        }
        // In the order of the replicas' ids, as before.
        let mut others: Vec<u32> = holders.into_iter().collect();
        others.sort_by_key(|n| replicas.ids[*n as usize]);
        for n in others {
            let (replica, name, seen, card) = &shown[n as usize];
            let class = seen.map_or(Reach::Unknown, |s| s.class());
            copies.push(CopyInfo {
                replica: replica.clone(),
                name: name.clone(),
                here: false,
                reachable: live.iter().any(|(l, _)| *l == n),
                class: if card.metered {
                    class.max(Reach::Far)
                } else {
                    class
                },
                connect_ms: seen.and_then(|s| s.connect_ms),
                bytes_per_sec: seen.and_then(|s| s.bytes_per_sec),
                published: card.urls.clone(),
                metered: card.metered,
            });
        }
        each(FileCopies {
            path: path.into_vec(),
            id: id.to_hex(),
            size,
            copies,
        })?;
    }
    Ok(unreachable)
}

/// Asks each replica reached for its location log and which of `ids` it
/// holds; one that fails part way is noted as not asked. The replicas
/// answering, numbered, with their answers by number.
#[allow(clippy::type_complexity)]
fn ask_all(
    repo: &Repository,
    mut reached: Vec<Reached>,
    ids: &[ObjectId],
    book: &mut ReachBook,
    unreachable: &mut Vec<String>,
) -> SyncResult<(Vec<Reached>, Numbered, Vec<(u32, Vec<bool>)>)> {
    let mut replicas = Numbered::default();
    let mut live = Vec::new();
    for r in &mut reached {
        let asked =
            exchange_locations(repo, r.remote.as_mut(), false).and_then(|_| r.remote.has(ids));
        match asked {
            Ok(answers) => live.push((replicas.number(r.id), answers)),
            Err(e) if e.is_remote_failure() => {
                book.failed(&r.url, &e);
                unreachable.push(format!("{} ({e})", r.name));
            }
            Err(e) => return Err(e),
        }
    }
    Ok((reached, replicas, live))
}

/// Replicas numbered in the order first met (a log from others may name many).
#[derive(Default)]
struct Numbered {
    ids: Vec<ReplicaId>,
    index: std::collections::HashMap<ReplicaId, u32>,
}

impl Numbered {
    fn number(&mut self, r: ReplicaId) -> u32 {
        let next = self.ids.len() as u32;
        *self.index.entry(r).or_insert_with(|| {
            self.ids.push(r);
            next
        })
    }
}

/// What to drop, and under which rule.
#[derive(Clone, Debug, Default)]
pub struct DropOptions {
    /// Paths (files or directories) of the checked-out commit.
    pub paths: Vec<Vec<u8>>,
    /// Drop from this remote instead of here.
    pub from: Option<String>,
    /// Copies that must remain (default: the config's numcopies, else 2).
    pub numcopies: Option<u32>,
    /// Drop without confirming other copies: the data may be lost for good.
    pub force: bool,
    /// The files of this commit rather than the checked-out one's.
    pub rev: Option<ObjectId>,
    /// Instead of paths: every file version here that this replica's slice
    /// does not keep (in any commit), as `recent:N` and `paths:` retain.
    pub unwanted: bool,
}

/// What a drop did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Dropped {
    /// File versions whose data was freed.
    pub files: usize,
    /// How many bytes of data were freed.
    pub freed_bytes: u64,
    /// Working-tree files removed (now absent).
    pub files_removed: usize,
    /// The replicas that confirmed copies, by name.
    pub confirmed_by: Vec<String>,
}

/// Frees the data of the files under `options.paths` here (or on
/// `options.from`), once at least `numcopies` other replicas confirmed,
/// live, that they hold all of it, each copy locked there until the drop is
/// done. Refuses otherwise, naming the files and the copies it could confirm.
pub fn drop_files(repo: &Repository, options: &DropOptions) -> SyncResult<Dropped> {
    let needed = options.numcopies.or(repo.config.numcopies).unwrap_or(2) as usize;
    if needed == 0 && !options.force {
        // No copy to confirm is a drop that trusts nothing: only --force may do that.
        return Err(SyncError::Refused(Refusal::NoCopiesToConfirm));
    }
    if options.from.is_none() && !repo.config.may_drop() {
        return Err(dmv_repo::RepoError::DropsNotAllowed {
            path: repo.root.clone(),
        }
        .into());
    }
    if options.unwanted
        && (options.from.is_some() || options.rev.is_some() || !options.paths.is_empty())
    {
        return Err(SyncError::Refused(Refusal::UnwantedTakesNoSelection));
    }
    let mut source: Option<Reached> = None;
    if let Some(from) = &options.from {
        let spec = find_remote(repo, from)?.spec;
        let mut remote = spec.connect()?;
        let id = remote_replica(repo, remote.as_mut())?;
        if id == repo.copies().replica_id()? {
            // Its copy is this one: it would confirm itself.
            return Err(SyncError::Refused(Refusal::DropFromItself {
                remote: from.clone(),
            }));
        }
        source = Some(Reached {
            name: from.clone(),
            url: spec.url,
            id,
            remote,
        });
    }
    // The files whose data is to go: here, the ones present; on a remote, the ones it has.
    let mut files: Vec<(Vec<u8>, ObjectId)> = Vec::new();
    let mut seen = BTreeSet::new();
    // Each candidate with whether its data is here.
    let listed: Vec<(Vec<u8>, ObjectId, bool)> = if options.unwanted {
        repo.copies()
            .unwanted_here()?
            .into_iter()
            .map(|(path, id)| (path, id, true))
            .collect()
    } else {
        let tree = match options.rev {
            Some(rev) => repo.commit(&rev)?.tree,
            None => repo
                .head_tree()?
                .ok_or(SyncError::Refused(Refusal::NoCommits))?,
        };
        let listed = repo.copies().availability(&tree, &options.paths)?;
        if listed.is_empty() && !options.paths.is_empty() {
            return Err(SyncError::Repo(dmv_repo::RepoError::NoMatch(
                String::from_utf8_lossy(&options.paths[0]).into_owned(),
            )));
        }
        listed
            .into_iter()
            .map(|f| (f.path, f.entry.id, f.present))
            .collect()
    };
    let there = match source.as_mut() {
        Some(s) => s
            .remote
            .has(&listed.iter().map(|(_, id, _)| *id).collect::<Vec<_>>())?,
        None => listed.iter().map(|(_, _, present)| *present).collect(),
    };
    // Of the files not all here, what is here (a mount's reads fetched it) goes
    // whatever the copies: this replica holds no copy of them, nor claims one.
    let pieces: Vec<ObjectId> = listed
        .iter()
        .filter(|(_, _, present)| source.is_none() && !present)
        .map(|(_, id, _)| *id)
        .collect();
    let pieces_freed = if repo.is_partial() {
        repo.copies().drop_pieces(&pieces)?
    } else {
        0
    };
    for ((path, id, _), there) in listed.into_iter().zip(there) {
        if there && seen.insert(id) {
            files.push((path, id));
        }
    }
    if files.is_empty() {
        // Nothing of these files is there any more, perhaps because a drop
        // from it was cut short: let the remote finish that one.
        let freed_bytes = match source.as_mut() {
            Some(s) => s.remote.copies()?.drop_content(&[])?.0,
            None => pieces_freed,
        };
        return Ok(Dropped {
            freed_bytes,
            ..Dropped::default()
        });
    }
    let ids: Vec<ObjectId> = files.iter().map(|(_, id)| *id).collect();
    if source.is_none() && !options.force && options.rev.is_none() && !options.unwanted {
        // Uncommitted changes to a file would be lost with it.
        let status = repo.status()?;
        if let Some(c) = status.unstaged.iter().chain(&status.staged).find(|c| {
            options.paths.is_empty() || options.paths.iter().any(|p| c.path.starts_with(p))
        }) {
            return Err(SyncError::Refused(Refusal::UncommittedChanges {
                path: String::from_utf8_lossy(&c.path).into_owned(),
            }));
        }
    }

    // Confirm and lock other copies until each file has `needed`.
    let mut confirmations = vec![0usize; ids.len()];
    let mut confirmed_by = Vec::new();
    let mut locks: Vec<(Box<dyn Remote>, String)> = Vec::new();
    // The copies each replica confirmed live, recorded before a drop here.
    let mut confirmed: Vec<(ReplicaId, Vec<ObjectId>)> = Vec::new();
    let mut local_lock: Option<String> = None;
    let mut unreachable = Vec::new();
    // Every lock is requested after this, so none is older.
    let locking = Instant::now();
    // Everything that may fail once a lock is taken, so the locks are released whatever happens.
    let result = (|| -> SyncResult<Dropped> {
        if !options.force {
            if source.is_some() {
                // Dropping from a remote: this replica's own copy counts, locked here like any other.
                let (lock, held) = repo.copies().lock_content(&ids, LOCK_SECONDS)?;
                count(&mut confirmations, &held, &mut confirmed_by, "here");
                local_lock = Some(lock);
            }
            let except = options.from.as_deref();
            let mut book = ReachBook::load(repo);
            let reached = reach_all(repo, except, &mut book, &mut unreachable);
            book.save();
            for mut r in reached? {
                if source.as_ref().is_some_and(|s| s.id == r.id)
                    || confirmations.iter().all(|c| *c >= needed)
                {
                    continue;
                }
                match r
                    .remote
                    .copies()
                    .and_then(|c| c.lock_content(&ids, LOCK_SECONDS))
                {
                    Ok((lock, held)) => {
                        count(&mut confirmations, &held, &mut confirmed_by, &r.name);
                        let its: Vec<ObjectId> = ids
                            .iter()
                            .zip(&held)
                            .filter(|(_, h)| **h)
                            .map(|(id, _)| *id)
                            .collect();
                        confirmed.push((r.id, its));
                        locks.push((r.remote, lock));
                    }
                    Err(e) => unreachable.push(format!("{} ({e})", r.name)),
                }
            }
        }
        let short: Vec<String> = files
            .iter()
            .zip(&confirmations)
            .filter(|(_, c)| **c < needed)
            .map(|((p, _), c)| format!("{} ({c} of {needed})", String::from_utf8_lossy(p)))
            .collect();
        if !short.is_empty() && !options.force {
            Err(SyncError::NotEnoughCopies {
                needed,
                files: short,
                unreachable: unreachable.clone(),
            })
        } else {
            dmv_repo::store::failpoint("drop-confirmed");
            let elapsed = locking.elapsed();
            match source.as_mut() {
                // Remotes are locked one after another and each may wait: the first locks may be about to expire.
                _ if !options.force && !locks_still_hold(elapsed) => {
                    Err(SyncError::Refused(Refusal::LocksNearExpiry {
                        took_secs: elapsed.as_secs(),
                        lock_secs: LOCK_SECONDS,
                    }))
                }
                Some(s) => {
                    // Said before anything goes, as a drop here does: a drop cut
                    // short (killed, the remote lost) leaves "not known to hold
                    // it", never a claim of a copy that may be gone.
                    repo.copies().record_locations(&ids, s.id, false)?;
                    match s.remote.copies()?.drop_content(&ids)? {
                        (_, locked) if !locked.is_empty() => {
                            // Nothing was dropped there: its copies stand.
                            repo.copies().record_locations(&ids, s.id, true)?;
                            Err(SyncError::CopyLocked {
                                replica: s.name.clone(),
                                count: locked.len(),
                            })
                        }
                        (freed_bytes, _) => Ok(Dropped {
                            files: ids.len(),
                            freed_bytes,
                            files_removed: 0,
                            confirmed_by: confirmed_by.clone(),
                        }),
                    }
                }
                None => {
                    // What the drop confirmed is recorded before anything goes:
                    // a replica whose log lacked those copies (a meta clone takes
                    // others' logs lazily) would otherwise know only that its own
                    // copy went, and call the version lost; a kill or a failed
                    // record after the drop would leave it so.
                    for (replica, held) in &confirmed {
                        repo.copies().record_locations(held, *replica, true)?;
                    }
                    let done = repo.copies().drop_data(&ids)?;
                    match done.locked.is_empty() {
                        true => Ok(Dropped {
                            files: ids.len(),
                            freed_bytes: done.freed_bytes + pieces_freed,
                            files_removed: done.files_removed,
                            confirmed_by: confirmed_by.clone(),
                        }),
                        false => Err(SyncError::CopyLocked {
                            replica: "this replica".into(),
                            count: done.locked.len(),
                        }),
                    }
                }
            }
        }
    })();
    let freed_here = source.is_none() && result.is_ok();
    // Unlock whatever happened; a lock left behind expires by itself.
    for (mut remote, lock) in locks {
        if freed_here {
            tell_of_drop(repo, remote.as_mut(), &ids);
        }
        let _ = remote.copies().and_then(|c| c.unlock_content(&lock));
    }
    if let Some(lock) = local_lock {
        let _ = repo.copies().unlock_content(&lock);
    }
    let dropped = result?;
    if let Some(s) = source.as_mut() {
        let _ = exchange_locations(repo, s.remote.as_mut(), true);
    }
    Ok(dropped)
}

/// What checking a remote's copies found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CopiesChecked {
    /// The remote's name, as given.
    pub remote: String,
    /// File versions of the history asked about.
    pub versions: usize,
    /// Versions the log said the remote holds and it does not (the log now says absent), by path.
    pub not_there: Vec<String>,
    /// Versions the remote holds that the log did not know of (now recorded).
    pub newly_known: usize,
}

/// git-annex's `fsck --from`: asks `name` live which versions of the
/// history it holds, and corrects the location log from the answers, so
/// the counts of copies that follow are the remote's truth, not hearsay.
pub fn check_copies(repo: &Repository, name: &str) -> SyncResult<CopiesChecked> {
    let mut remote = find_remote(repo, name)?.connect()?;
    let id = remote_replica(repo, remote.as_mut())?;
    let versions = repo.copies().file_versions()?;
    let ids: Vec<ObjectId> = versions.keys().copied().collect();
    let wanted: std::collections::HashSet<ObjectId> = ids.iter().copied().collect();
    // What this replica believed before asking (the remote's own log may know better, and is merged in next).
    let log = repo
        .copies()
        .locations_where(|r| r.replica == id && wanted.contains(&r.key))?;
    let said: std::collections::HashSet<ObjectId> = log
        .iter()
        .filter(|r| r.stamp.present)
        .map(|r| r.key)
        .collect();
    exchange_locations(repo, remote.as_mut(), false)?;
    let there = remote.has(&ids)?;
    let (mut gone, mut found) = (Vec::new(), Vec::new());
    for (id, there) in ids.iter().zip(there) {
        match (there, said.contains(id)) {
            (false, true) => gone.push(*id),
            (true, false) => found.push(*id),
            _ => {}
        }
    }
    repo.copies().record_locations(&gone, id, false)?;
    repo.copies().record_locations(&found, id, true)?;
    let not_there = gone
        .iter()
        .map(|g| String::from_utf8_lossy(&versions[g]).into_owned())
        .collect();
    Ok(CopiesChecked {
        remote: name.to_string(),
        versions: ids.len(),
        not_there,
        newly_known: found.len(),
    })
}

fn count(confirmations: &mut [usize], held: &[bool], confirmed_by: &mut Vec<String>, name: &str) {
    let mut any = false;
    for (c, h) in confirmations.iter_mut().zip(held) {
        if *h {
            *c += 1;
            any = true;
        }
    }
    if any {
        confirmed_by.push(name.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drop_frees_data_only_while_its_locks_hold_by_the_margin() {
        assert!(locks_still_hold(Duration::ZERO));
        assert!(locks_still_hold(Duration::from_secs(
            LOCK_SECONDS - LOCK_MARGIN_SECONDS - 1
        )));
        assert!(!locks_still_hold(Duration::from_secs(
            LOCK_SECONDS - LOCK_MARGIN_SECONDS
        )));
        assert!(!locks_still_hold(Duration::from_secs(LOCK_SECONDS)));
    }
}
