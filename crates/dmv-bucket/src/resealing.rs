//! Sealing again, with the newest key, what an encrypted repository stores
//! sealed with older ones (`dmv keys rotate --rewrite`): after a device's
//! key is removed and the key rotated, whoever kept the old key reads
//! nothing the bucket holds, not even what was stored before.
//!
//! Names stay as they are (they are keyed by the oldest epoch, so that
//! dedup holds across rotations): only bodies change. Each object is read
//! at a version and replaced only if it is still at that version, so a
//! writer or a gc at the same moment wins over the rewrite, never the
//! other way round (a pack gc removed is not brought back). An object
//! already sealed with the newest key is passed over after reading its
//! 25-byte header: a rewrite cut short is finished by running it again.

use crate::error::{lost_race, BucketError, BucketResult};
use crate::objects::Objects;
use crate::sealing::Sealing;
use crate::url::Conn;

/// How often one object is tried again when a writer keeps changing it.
const ATTEMPTS: usize = 4;

/// What a rewrite did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resealed {
    /// Sealed objects looked at.
    pub objects: u64,
    /// Of those, the ones sealed again (the rest already had the newest key,
    /// or were replaced or removed by another writer meanwhile).
    pub resealed: u64,
    /// Their stored bytes.
    pub bytes: u64,
}

/// Seals every object not sealed with the newest epoch of `conn`'s keyring
/// again with it; `progress(done, total)` in stored bytes looked at, after
/// each object.
pub(crate) fn reseal(conn: &Conn, progress: &mut dyn FnMut(u64, u64)) -> BucketResult<Resealed> {
    let Some(sealing) = conn.sealing.clone() else {
        return Err(BucketError::Keys {
            url: conn.target.url.clone(),
            detail: "the repository is not encrypted: there is nothing to seal again".into(),
        });
    };
    let newest = sealing.keyring().newest_epoch();
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    let listed = conn.run("listing the repository's objects", async move {
        objects
            .list_all("")
            .await
            .map_err(|e| target.classify(e, "listing the repository's objects"))
    })?;
    let sealed: Vec<_> = listed
        .into_iter()
        .filter(|e| Sealing::is_sealed_key(&e.key))
        .collect();
    let total = sealed.iter().map(|e| e.len).sum();
    let (mut done, mut looked_at) = (Resealed::default(), 0);
    for listed in sealed {
        // Packs are up to tens of MiB: sent with the upload timeouts.
        let objects = match Sealing::is_pack_body(&listed.key) {
            true => Objects::for_uploads(conn),
            false => Objects::of(conn),
        };
        let (target, key) = (conn.target.clone(), listed.key.clone());
        let bytes = conn.run("sealing an object again", async move {
            reseal_one(&objects, &key, newest)
                .await
                .map_err(|e| target.classify(e, &format!("sealing {key} again")))
        })?;
        done.objects += 1;
        looked_at += listed.len;
        if let Some(bytes) = bytes {
            done.resealed += 1;
            done.bytes += bytes;
            dmv_store::failpoint("bucket-object-resealed");
        }
        progress(looked_at, total);
    }
    Ok(done)
}

/// Seals the object at stored `key` again with epoch `newest`, unless it
/// already is, or is gone: the stored bytes written, if it was.
async fn reseal_one(objects: &Objects, key: &str, newest: u32) -> opendal::Result<Option<u64>> {
    for _ in 0..ATTEMPTS {
        match objects.sealed_epoch(key).await {
            Ok(epoch) if epoch >= newest => return Ok(None),
            Ok(_) => {}
            Err(e) if e.kind() == opendal::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
        let stat = match objects.stat(key).await {
            Ok(stat) => stat,
            Err(e) if e.kind() == opendal::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(etag) = stat.etag else {
            return Err(opendal::Error::new(
                opendal::ErrorKind::Unsupported,
                "the storage gives no version of an object, so it cannot be replaced safely",
            ));
        };
        let body = match objects.get_if_match(key, &etag).await {
            Ok(body) => body,
            Err(e) if e.kind() == opendal::ErrorKind::NotFound => return Ok(None),
            // Changed since the stat: looked at again.
            Err(e) if lost_race(&e) => continue,
            Err(e) => return Err(e),
        };
        // Where a test has another writer change the object under the rewrite.
        dmv_store::failpoint("bucket-reseal-read");
        if objects.put_if_match(key, body, &etag).await? {
            return Ok(Some(stat.len));
        }
    }
    Err(opendal::Error::new(
        opendal::ErrorKind::Unexpected,
        format!("{key} kept changing while it was sealed again"),
    ))
}
