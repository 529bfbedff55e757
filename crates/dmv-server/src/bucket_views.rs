//! The web UI of a repository kept in a bucket. dmv-web reads a local
//! repository, so each server keeps a *view* of the bucket in its cache
//! directory: a bare replica of its metadata only (commits and trees),
//! its branches and tags those of the bucket, brought up to date before a
//! page is made (at most once a second: a page's thumbnails do not each
//! list the bucket), and a file's data fetched the first time a page
//! reads it (a thumbnail, a download, a README). Only a comment written
//! from a page goes back to the bucket (its review log, joined and sent
//! as a push sends it): the view is no replica of the repository's (it is
//! in no location log), only the server's cache, thrown away when it grows past
//! [`VIEW_DATA_BUDGET`] or the server stops. Every server of a bucket keeps
//! its own, so any of them shows the same pages.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dmv_repo::ref_names::{BRANCHES, TAGS};
use dmv_repo::store::ObjectId;
use dmv_repo::{Head, RefUpdate, Repository};
use dmv_sync::{BucketOptions, BucketRemote, Remote, Silent};

/// File data a view keeps before it is thrown away and started afresh (a
/// wall's thumbnails are cached beside it and go with it).
pub(crate) const VIEW_DATA_BUDGET: u64 = 4 << 30;
/// How stale a view's branches may be when a page is made.
const FRESH_FOR: Duration = Duration::from_secs(1);

/// One view's folder, removed when the last page using it is done.
pub(crate) struct View {
    dir: tempfile::TempDir,
    /// When its refs were last brought up to date (None: never).
    refreshed: Mutex<Option<Instant>>,
}

impl View {
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The views of the served buckets, by repository name.
pub(crate) struct BucketViews {
    root: PathBuf,
    open: Mutex<HashMap<String, Arc<View>>>,
}

/// How to reach a served bucket: its URL and options, and the folder where
/// the server mirrors its pack indexes.
pub(crate) struct BucketPlace {
    pub url: String,
    pub options: BucketOptions,
    pub index_cache: PathBuf,
}

impl BucketPlace {
    pub fn connect(&self) -> Result<BucketRemote, String> {
        BucketRemote::open(&self.url, &self.options, Some(&self.index_cache))
            .map_err(|e| e.to_string())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BucketViews {
    /// Views kept under `root` (made when first needed).
    pub fn new(root: PathBuf) -> BucketViews {
        BucketViews {
            root,
            open: Mutex::default(),
        }
    }

    /// The view of the repository `name` kept at `place`, made if there is
    /// none, its refs those of the bucket (unless brought up to date less
    /// than a second ago). Blocks: call it on a page's thread.
    pub fn view(&self, name: &str, place: &BucketPlace) -> Result<Arc<View>, String> {
        let view = self.current(name, place)?;
        let mut refreshed = lock(&view.refreshed);
        if refreshed.is_none_or(|at| at.elapsed() >= FRESH_FOR) {
            let repo = Repository::open(view.dir()).map_err(|e| e.to_string())?;
            let mut bucket = place.connect()?;
            follow_refs(&repo, &mut bucket)?;
            copy_locks(&repo, &mut bucket)?;
            *refreshed = Some(Instant::now());
        }
        drop(refreshed);
        Ok(view)
    }

    /// The view in use for `name`, or a new one.
    fn current(&self, name: &str, place: &BucketPlace) -> Result<Arc<View>, String> {
        if let Some(view) = lock(&self.open).get(name) {
            return Ok(view.clone());
        }
        std::fs::create_dir_all(&self.root).map_err(|e| e.to_string())?;
        let dir = tempfile::Builder::new()
            .prefix("view-")
            .tempdir_in(&self.root)
            .map_err(|e| e.to_string())?;
        let bucket = place.connect()?;
        Repository::init_set_up(dir.path(), bucket.chunking(), true, |_, config| {
            config.partial = true;
            config.slice = dmv_repo::Slice::Meta;
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        let view = Arc::new(View {
            dir,
            refreshed: Mutex::new(None),
        });
        // Two first pages at once: the one that came first is kept.
        Ok(lock(&self.open)
            .entry(name.to_string())
            .or_insert(view)
            .clone())
    }

    /// Fetches the data of file versions `ids` into `view` from the
    /// bucket; says whether that worked. A view grown past its budget is
    /// let go (the next page starts another; this one's folder goes once
    /// the pages using it are done).
    pub fn bring(&self, name: &str, view: &View, place: &BucketPlace, ids: &[ObjectId]) -> bool {
        let fetched = (|| {
            let repo = Repository::open(view.dir()).map_err(|e| e.to_string())?;
            let mut bucket = place.connect()?;
            dmv_sync::fetch_file_data(&repo, &mut bucket, ids, &Silent, dmv_sync::Along::Nothing)
                .map_err(|e| e.to_string())
        })();
        if folder_bytes(view.dir()) > VIEW_DATA_BUDGET {
            let mut open = lock(&self.open);
            if open
                .get(name)
                .is_some_and(|kept| std::ptr::eq(kept.as_ref(), view))
            {
                open.remove(name);
            }
        }
        fetched.is_ok()
    }

    /// Writes a comment, reply, resolve or approval from a page (`write`,
    /// into the view) and sends the view's review log to the bucket. The
    /// answer is the page's; a log the bucket did not take is an error, so
    /// nobody is told their comment is kept when only this cache holds it.
    /// The mentions it brings are recorded in the bucket's audit log.
    pub fn change_review(
        &self,
        name: &str,
        place: &BucketPlace,
        write: impl FnOnce(&Repository) -> dmv_web::Reply,
        events: &dmv_sync::Events,
    ) -> Result<(dmv_web::Reply, Repository), String> {
        let view = self.view(name, place)?;
        let repo = Repository::open(view.dir()).map_err(|e| e.to_string())?;
        let old = review_log_tip(&repo)?;
        let reply = write(&repo);
        if matches!(reply, dmv_web::Reply::Redirect(_)) {
            let mut bucket = place.connect()?;
            dmv_sync::send_union_logs(&repo, &mut bucket).map_err(|e| e.to_string())?;
            self.outdated(name);
            if let Some(new) = review_log_tip(&repo)? {
                match dmv_sync::mention_events(&repo, old, new) {
                    Ok(told) => told.into_iter().for_each(|event| {
                        dmv_sync::record_in_bucket(bucket.bucket(), events, event)
                    }),
                    Err(why) => events.failed(&why),
                }
            }
        }
        Ok((reply, repo))
    }

    /// Makes the next page of `name` read the bucket's refs again (a
    /// commit just moved one).
    pub fn outdated(&self, name: &str) {
        if let Some(view) = lock(&self.open).get(name) {
            *lock(&view.refreshed) = None;
        }
    }
}

impl BucketViews {
    /// Takes, gives back or breaks (`action`) `user`'s locks of `paths` in
    /// the bucket, under the rules every client of the bucket meets; the
    /// view's copy of the locks is read again at the next page.
    pub fn change_lock(
        &self,
        name: &str,
        place: &BucketPlace,
        paths: &[String],
        user: &str,
        action: dmv_web::LockAction,
        audit: (&dmv_sync::Events, dmv_repo::AuditEvent),
    ) -> Result<(), String> {
        let e = |e: dmv_sync::SyncError| e.to_string();
        let mut bucket = place.connect()?;
        let keeper = bucket.path_locks().map_err(e)?;
        match action {
            dmv_web::LockAction::Take => keeper.lock_paths(paths, dmv_web::WEB_REPLICA, user),
            dmv_web::LockAction::Release => keeper.unlock_paths(paths, false, user),
            dmv_web::LockAction::Break => keeper.unlock_paths(paths, true, user),
        }
        .map_err(e)?;
        dmv_sync::record_in_bucket(bucket.bucket(), audit.0, audit.1);
        self.outdated(name);
        Ok(())
    }
}

/// Where a repository's review log is now.
pub(crate) fn review_log_tip(
    repo: &Repository,
) -> Result<Option<dmv_repo::store::ObjectId>, String> {
    repo.refs
        .get(dmv_repo::ref_names::REVIEW_LOG)
        .map_err(|e| e.to_string())
}

/// Makes the view's lock table the bucket's (the pages show it: who holds
/// a file, and the buttons to take or give back).
fn copy_locks(repo: &Repository, bucket: &mut BucketRemote) -> Result<(), String> {
    let e = |e: dmv_sync::SyncError| e.to_string();
    let theirs = bucket.path_locks().map_err(e)?.list_locks("").map_err(e)?;
    let mut held = repo.locks().hold_locks().map_err(|e| e.to_string())?;
    let mut table = dmv_repo::LockTable::default();
    for l in &theirs.locks {
        // Each path once: a bucket's locks are one object per path.
        let _ = table.lock(std::slice::from_ref(&l.path), &l.owner, &l.replica, l.since);
    }
    if held.table != table {
        held.table = table;
        held.save().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Moves the view's branches and tags to the bucket's, fetching the
/// commits and trees they reach, joins the bucket's union logs into its
/// own, and points HEAD where the bucket's does.
fn follow_refs(repo: &Repository, bucket: &mut BucketRemote) -> Result<(), String> {
    let e = |e: dmv_sync::SyncError| e.to_string();
    let listed = bucket.list_refs().map_err(e)?;
    let theirs: HashMap<&str, ObjectId> = listed
        .refs
        .iter()
        .filter(|(n, _)| n.starts_with(BRANCHES) || n.starts_with(TAGS))
        .map(|(n, id)| (n.as_str(), *id))
        .collect();
    let mut ours: HashMap<String, ObjectId> = HashMap::new();
    for prefix in [BRANCHES, TAGS] {
        ours.extend(repo.refs.list(prefix).map_err(|e| e.to_string())?);
    }
    let mut moves: Vec<RefUpdate> = theirs
        .iter()
        .filter(|(n, id)| ours.get(**n) != Some(id))
        .map(|(n, id)| RefUpdate {
            name: n.to_string(),
            expected: Some(ours.get(*n).copied()),
            new: Some(*id),
        })
        .collect();
    moves.extend(
        ours.iter()
            .filter(|(n, _)| !theirs.contains_key(n.as_str()))
            .map(|(n, id)| RefUpdate {
                name: n.clone(),
                expected: Some(Some(*id)),
                new: None,
            }),
    );
    let wants: Vec<ObjectId> = moves.iter().filter_map(|m| m.new).collect();
    if !moves.is_empty() {
        dmv_sync::fetch_objects(repo, bucket, &wants, &Silent, None, || {
            Ok(repo.update_refs(&moves, "dmv serve", "follow the bucket")?)
        })
        .map_err(e)?;
    }
    // The review log too: the pages show its comments, and a comment
    // written here is joined to it before it is sent back.
    dmv_sync::join_union_logs(repo, bucket, &listed.refs).map_err(e)?;
    if let Some(head) = listed.head {
        repo.set_head(&Head::Branch(head))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Bytes of the files under `dir`.
fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}
