//! Fetches of file versions for a reader that stays: a mount copying a
//! folder out of a meta clone asks for a batch of files every few hundred
//! milliseconds. Each batch fetched as a `get` is connected anew (a hello
//! first) and ends by telling the replica it came from of this replica's
//! new copies, which a hub merges into its location log: of a `cp -r` of
//! 5,000 photos out of a mount, 26 batches, the hub spent 58% of its CPU
//! on those merges. Here the connections that answered are kept for the
//! next fetches, and the new copies are told at most every
//! [`TELL_EVERY`], and when the fetcher ends.
//!
//! Each batch seals a pack of its own, and a `get` rolls small packs
//! together as it ends. After each batch, that put a roll of nine
//! batches' packs (115 MB of photos) on the reader's path every nine
//! batches: of a mount's CPU in a `cp -r` of 10,000 photos, a quarter.
//! Here the packs are rolled once the fetches pause (see
//! [`VersionFetcher::tidy_due`]), past [`MOST_UNTIDIED`] fetches, and
//! when the fetcher ends; until then a session's own bound keeps the
//! lookups few (more than 16 packs outside the multi-pack index are
//! indexed in it, without rewriting their data).

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dmv_repo::{FlatEntry, Progress, Repository};

use crate::operations::locations::tell_of_records;
use crate::operations::partial::{absent_of, fetch_keeping, note_untold, Keeping, Kept, Untold};
use crate::operations::reach::ReachBook;
use crate::operations::receive::Along;
use crate::SyncResult;

/// How long new copies may wait before the replicas they came from are
/// told: until then only this replica's log says it holds them, which is
/// never a false claim, and any exchange of logs spreads them anyway.
pub const TELL_EVERY: Duration = Duration::from_secs(5);

/// Connections kept idle at most: one per fetch that ran at once.
const MOST_IDLE: usize = 8;

/// How long the fetches pause before the packs they sealed are rolled.
const TIDY_WHEN_IDLE: Duration = Duration::from_secs(2);

/// The most fetches whose packs wait for a pause: a reader that never
/// pauses (a library copied out for hours) has them rolled past this
/// many, by the fetch that reaches it.
const MOST_UNTIDIED: usize = 64;

/// The fetches since the packs were last rolled.
struct Untidied {
    fetches: usize,
    in_flight: usize,
    last_ended: Instant,
}

/// Fetches file versions into a repository again and again, from several
/// threads at once (see the module's note).
pub struct VersionFetcher<'r> {
    repo: &'r Repository,
    /// Connections that answered, idle between fetches.
    idle: Mutex<Vec<Kept>>,
    /// New copies the replicas they came from were not told of yet, and
    /// when they were told last.
    untold: Mutex<(Untold, Instant)>,
    tell_every: Duration,
    untidied: Mutex<Untidied>,
    tidy_when_idle: Duration,
}

impl<'r> VersionFetcher<'r> {
    /// A fetcher for `repo`, connected to nothing yet.
    pub fn new(repo: &'r Repository) -> VersionFetcher<'r> {
        VersionFetcher {
            repo,
            idle: Mutex::new(Vec::new()),
            untold: Mutex::new((Untold::new(), Instant::now())),
            tell_every: TELL_EVERY,
            untidied: Mutex::new(Untidied {
                fetches: 0,
                in_flight: 0,
                last_ended: Instant::now(),
            }),
            tidy_when_idle: TIDY_WHEN_IDLE,
        }
    }

    /// The same, telling new copies at most every `every` instead of
    /// [`TELL_EVERY`].
    pub fn telling_every(mut self, every: Duration) -> VersionFetcher<'r> {
        self.tell_every = every;
        self
    }

    /// The same, rolling the packs once the fetches pause for `idle`
    /// instead of [`TIDY_WHEN_IDLE`].
    pub fn tidying_when_idle(mut self, idle: Duration) -> VersionFetcher<'r> {
        self.tidy_when_idle = idle;
        self
    }

    /// [`crate::fetch_versions_along`] over a kept connection where one
    /// is idle; the new copies are told later, and the packs rolled later
    /// (see [`VersionFetcher::tidy_due`]). Returns how many were fetched.
    pub fn fetch(
        &self,
        versions: impl IntoIterator<Item = (Vec<u8>, FlatEntry)>,
        along: Along<'_>,
        progress: &dyn Progress,
    ) -> SyncResult<usize> {
        let wanted = absent_of(self.repo, versions)?;
        if wanted.is_empty() {
            return Ok(0);
        }
        lock(&self.untidied).in_flight += 1;
        let mut keeping = Keeping {
            connection: lock(&self.idle).pop(),
            ..Keeping::default()
        };
        let fetched = fetch_keeping(
            self.repo,
            &wanted,
            None,
            along,
            progress,
            Some(&mut keeping),
        );
        if let Some(kept) = keeping.connection {
            let mut idle = lock(&self.idle);
            if idle.len() < MOST_IDLE {
                idle.push(kept);
            }
        }
        // What arrived before a failure is here, and is told all the same.
        self.wait_to_tell(keeping.untold);
        if self.tell_due() {
            self.tell_now();
        }
        let untidied = {
            let mut untidied = lock(&self.untidied);
            untidied.in_flight -= 1;
            untidied.fetches += 1;
            untidied.last_ended = Instant::now();
            untidied.fetches
        };
        if untidied >= MOST_UNTIDIED {
            self.tidy_now();
        }
        fetched?;
        Ok(wanted.len())
    }

    /// Whether packs sealed by fetches wait to be rolled, and no fetch has
    /// run for [`TIDY_WHEN_IDLE`]: a reader that stays calls
    /// [`VersionFetcher::tidy_now`] then, off its readers' path.
    pub fn tidy_due(&self) -> bool {
        let untidied = lock(&self.untidied);
        untidied.fetches > 0
            && untidied.in_flight == 0
            && untidied.last_ended.elapsed() >= self.tidy_when_idle
    }

    /// Rolls the small packs together as a `get` does as it ends (if
    /// another process does not hold the store: then its next command
    /// rolls them).
    pub fn tidy_now(&self) {
        lock(&self.untidied).fetches = 0;
        self.repo.tidy_store();
    }

    /// Whether copies wait to be told, and were last told [`TELL_EVERY`]
    /// ago or more.
    pub fn tell_due(&self) -> bool {
        let untold = lock(&self.untold);
        !untold.0.is_empty() && untold.1.elapsed() >= self.tell_every
    }

    /// Tells each replica data came from of the copies made here since it
    /// was told last. Best effort, as after a `get`: what a replica could
    /// not be asked (a hub restarting) waits for the next tell.
    pub fn tell_now(&self) {
        let untold = {
            let mut untold = lock(&self.untold);
            untold.1 = Instant::now();
            std::mem::take(&mut untold.0)
        };
        let mut book = None;
        let mut unasked = Untold::new();
        for (url, (spec, records)) in untold {
            let kept = {
                let mut idle = lock(&self.idle);
                let at = idle.iter().position(|k| k.spec.url == url);
                at.map(|at| idle.swap_remove(at))
            };
            // A kept connection may have been closed while idle: the
            // records then go over a new one.
            if let Some(mut kept) = kept {
                if tell_of_records(self.repo, kept.remote.as_mut(), records.clone()) {
                    lock(&self.idle).push(kept);
                    continue;
                }
            }
            let book = book.get_or_insert_with(|| ReachBook::load(self.repo));
            let told = match book.connect(&spec) {
                Ok(mut remote) => tell_of_records(self.repo, remote.as_mut(), records.clone()),
                Err(_) => false,
            };
            if !told {
                unasked.insert(url, (spec, records));
            }
        }
        if let Some(book) = book {
            book.save();
        }
        self.wait_to_tell(unasked);
    }

    /// Adds `more` to the copies waiting to be told.
    fn wait_to_tell(&self, more: Untold) {
        let mut untold = lock(&self.untold);
        for (spec, records) in more.into_values() {
            note_untold(&mut untold.0, &spec, records);
        }
    }
}

impl Drop for VersionFetcher<'_> {
    fn drop(&mut self) {
        self.tell_now();
        if lock(&self.untidied).fetches > 0 {
            self.tidy_now();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
