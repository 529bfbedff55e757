//! Uploading objects as packs. A push writes its packs with the store's own
//! pack writer into a staging directory beside the mirror, uploads each
//! while the next is written, and publishes them in the order written: a
//! pack counts only once its index exists, and an index goes up only after
//! its pack and every pack before it. So the bucket holds an object only
//! together with everything it reaches, and an interrupted push resumes by
//! skipping the packs it finished.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dmv_store::{index_file_name, ChunkParams, ObjectId, Store, StoreError, StoredObject, Tally};
use futures_util::StreamExt;

use crate::error::{BucketError, BucketResult, Target};
use crate::layout::{index_key, pack_key, PACK_SIZE};
use crate::mirror::Mirror;
use crate::objects::Objects;
use crate::url::Conn;

/// Multipart part size, how many parts of one pack upload at once, and how
/// many packs upload at once (their indexes still go up one after another).
/// Two packs in flight measured no faster on loopback and cost 30 MiB more;
/// a store far away may want more.
const PART_SIZE: usize = 8 << 20;
const UPLOAD_CONCURRENCY: usize = 4;
const PACKS_IN_FLIGHT: usize = 1;

/// Hands each object of an upload to a sink (children before parents).
pub type Producer<'a, E> = &'a mut dyn FnMut(ObjectSink<'_, E>) -> Result<(), E>;
/// Takes one object of an upload; an error stops the upload.
pub type ObjectSink<'a, E> = &'a mut dyn FnMut(&StoredObject) -> Result<(), E>;

/// An upload's writer renews its hold on the bucket (a push its
/// registration, a drop its lease) at least this often.
const RENEW_EVERY: Duration = Duration::from_secs(30);

/// Which objects an upload leaves out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Those the mirror (so the bucket) has: a push.
    Present,
    /// None: a drop rewriting packs, whose objects are all there already.
    Nothing,
}

/// Uploads what `produce` hands over, leaving out what `skip` says, and
/// calls `renew` every [`RENEW_EVERY`] while it runs. `sent` counts the
/// bytes of packs that reached the bucket (on this thread, also
/// while the last pack uploads after the objects are all staged). Returns
/// (objects, bytes) stored.
#[allow(clippy::too_many_arguments)]
pub(crate) fn put_objects<E: From<BucketError> + From<StoreError>>(
    conn: &Conn,
    mirror: &Mirror,
    chunking: ChunkParams,
    skip: Skip,
    renew: &dyn Fn() -> BucketResult<()>,
    sent: &Tally<'_>,
    produce: Producer<'_, E>,
) -> Result<(u64, u64), E> {
    let staging_dir = mirror.staging_dir();
    let _ = std::fs::remove_dir_all(&staging_dir);
    Store::create(&staging_dir)?;
    let mut renewed = Instant::now();
    let mut renew_now = || -> BucketResult<()> {
        if renewed.elapsed() >= RENEW_EVERY {
            renew()?;
            renewed = Instant::now();
        }
        Ok(())
    };
    let result = put_staged(
        conn,
        mirror,
        chunking,
        &staging_dir,
        skip,
        &mut renew_now,
        sent,
        produce,
    );
    let _ = std::fs::remove_dir_all(&staging_dir);
    let _ = mirror.store.reload();
    result
}

#[allow(clippy::too_many_arguments)]
fn put_staged<E: From<BucketError> + From<StoreError>>(
    conn: &Conn,
    mirror: &Mirror,
    chunking: ChunkParams,
    staging_dir: &Path,
    skip: Skip,
    renew: &mut dyn FnMut() -> BucketResult<()>,
    sent: &Tally<'_>,
    produce: Producer<'_, E>,
) -> Result<(u64, u64), E> {
    let staging = Store::open_scratch(staging_dir, chunking, PACK_SIZE)?;
    let (jobs, queue) = tokio::sync::mpsc::channel::<Sealed>(1);
    let uploaded = Arc::new(AtomicU64::new(0));
    let reported = AtomicU64::new(0);
    let report = || {
        let now = uploaded.load(Ordering::Relaxed);
        let before = reported.swap(now, Ordering::Relaxed);
        if now > before {
            sent.add(now - before);
        }
    };
    // Uploads run on the runtime's threads (see `Conn::run`) while this one writes packs.
    let mut uploader = conn.runtime.spawn(upload_in_order(
        Objects::for_uploads(conn),
        conn.target.clone(),
        queue,
        mirror.store.packs_dir().to_path_buf(),
        uploaded.clone(),
    ));
    let mut stored = (0u64, 0u64);
    let produced = (|| -> Result<(), E> {
        let mut session = staging.begin_write()?;
        session.on_seal(move |sealed| {
            let job = Sealed {
                checksum: sealed.checksum,
                pack: sealed.pack_path.to_path_buf(),
                index: sealed.index_path.to_path_buf(),
            };
            jobs.blocking_send(job)
                .map_err(|_| StoreError::Internal("the upload stopped".into()))
        });
        produce(&mut |obj: &StoredObject| {
            renew()?;
            report();
            let there = skip == Skip::Present && mirror.store.contains(&obj.id)?;
            if !there && session.put_verified(obj)? {
                stored.0 += 1;
                stored.1 += obj.payload.len() as u64;
            }
            Ok(())
        })?;
        session.finish()?;
        Ok(())
    })();
    // The last packs upload after everything is staged: their bytes are told as they go.
    let finished = conn.runtime.block_on(async {
        loop {
            match tokio::time::timeout(Duration::from_millis(200), &mut uploader).await {
                Ok(done) => return done,
                Err(_) => report(),
            }
        }
    });
    report();
    let finished = finished.unwrap_or_else(|e| {
        Err(BucketError::Internal {
            what: "the upload task",
            detail: e.to_string(),
        })
    });
    // The upload's own error says more than "the upload stopped".
    finished.map_err(E::from)?;
    produced?;
    Ok(stored)
}

/// A pack staged for upload.
struct Sealed {
    checksum: ObjectId,
    pack: PathBuf,
    index: PathBuf,
}

/// Uploads staged packs as they come, the bodies of up to
/// [`PACKS_IN_FLIGHT`] at once, and publishes each (uploads its index) only
/// after every pack before it: a pack becomes visible in the order written.
/// A published index joins the mirror (`published`).
async fn upload_in_order(
    objects: Objects,
    target: Target,
    mut queue: tokio::sync::mpsc::Receiver<Sealed>,
    published: PathBuf,
    uploaded: Arc<AtomicU64>,
) -> BucketResult<()> {
    let mut bodies = futures_util::stream::FuturesOrdered::new();
    let mut more = true;
    loop {
        while more && bodies.len() < PACKS_IN_FLIGHT {
            match queue.recv().await {
                // A task of its own, so the body keeps uploading while this waits for the next pack.
                Some(job) => bodies.push_back(tokio::spawn(upload_body(
                    objects.clone(),
                    target.clone(),
                    job,
                    uploaded.clone(),
                ))),
                None => more = false,
            }
        }
        let Some(done) = bodies.next().await else {
            return Ok(());
        };
        let job = done.map_err(|e| BucketError::Internal {
            what: "an upload task",
            detail: e.to_string(),
        })??;
        let key = index_key(&job.checksum);
        let index = std::fs::read(&job.index)
            .map_err(|e| BucketError::io("cannot read the staged index", &job.index, e))?;
        objects
            .put(&key, index)
            .await
            .map_err(|e| target.classify(e, &format!("uploading {key}")))?;
        // Published: the index joins the mirror, the staged pack goes.
        let _ = std::fs::rename(&job.index, published.join(index_file_name(&job.checksum)));
        let _ = std::fs::remove_file(&job.pack);
    }
}

/// Uploads a staged pack's bytes (multipart, parts in parallel); invisible
/// until its index follows.
async fn upload_body(
    objects: Objects,
    target: Target,
    job: Sealed,
    uploaded: Arc<AtomicU64>,
) -> BucketResult<Sealed> {
    let key = pack_key(&job.checksum);
    let fail = |e: opendal::Error| target.classify(e, &format!("uploading {key}"));
    let local = |e: std::io::Error| BucketError::io("cannot read the staged pack", &job.pack, e);
    let mut file = std::fs::File::open(&job.pack).map_err(local)?;
    let len = std::fs::metadata(&job.pack).map_err(local)?.len();
    let mut upload = objects
        .put_parts(&key, len, PART_SIZE, UPLOAD_CONCURRENCY)
        .await
        .map_err(fail)?;
    let written = async {
        let mut spare = None;
        loop {
            let mut part = spare
                .take()
                .unwrap_or_else(|| Vec::with_capacity(PART_SIZE));
            (&mut file)
                .take(PART_SIZE as u64)
                .read_to_end(&mut part)
                .map_err(local)?;
            if part.is_empty() {
                break;
            }
            let n = part.len() as u64;
            spare = upload.put_part(part).await.map_err(fail)?;
            uploaded.fetch_add(n, Ordering::Relaxed);
        }
        upload.finish().await.map_err(fail)
    }
    .await;
    if let Err(e) = written {
        // Best effort: an abandoned multipart upload costs storage until a lifecycle rule ends it.
        let _ = upload.abort().await;
        return Err(e);
    }
    dmv_store::failpoint("bucket-pack-uploaded");
    Ok(job)
}
