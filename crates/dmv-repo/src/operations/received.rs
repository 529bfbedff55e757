//! What a push has stored but no ref names yet: a hub receives a push's
//! objects in one request and moves its refs in the next, and a gc between
//! the two (even `--prune=now`, which has no grace period) must keep them.
//! As git keeps a received pack while its `.keep` file lasts, each upload
//! leaves a content lock (the format of a drop's, in the same folder, so gc
//! keeps what it names) on the objects nothing else in the upload refers
//! to; the ref update that names them all removes it, and an upload whose
//! ref update never came is let go after [`RECEIVED_HOLD_SECONDS`].

use std::collections::HashSet;

use dmv_store::ObjectId;

use crate::error::{RepoError, RepoResult};
use crate::operations::gc::{content_locks, write_content_lock, ContentLock};
use crate::replica::locations::{now_ns, ReplicaId};
use crate::repository::handles::Maintenance;

/// How long an upload is kept waiting for the ref update that names it:
/// a client sends that update at once, so only a client that died between
/// its two requests waits this long.
pub const RECEIVED_HOLD_SECONDS: u64 = 3600;

/// The start of a received upload's lock name (a drop's lock is all hex,
/// so neither can name the other's).
const PREFIX: &str = "received-";

impl Maintenance<'_> {
    /// Keeps `roots` (and all they reach) from gc until
    /// [`Maintenance::release_received`] is given every one of them or
    /// [`RECEIVED_HOLD_SECONDS`] have passed. Called while the upload's
    /// write session still holds gc off, so no gc runs between the objects
    /// landing and the lock. Removes the locks of uploads that expired.
    pub fn hold_received(&self, roots: &[ObjectId]) -> RepoResult<()> {
        if roots.is_empty() {
            return Ok(());
        }
        let now = now_ns();
        for lock in self.received_locks()? {
            if lock.expires.is_some_and(|e| e < now) {
                let _ = std::fs::remove_file(lock.path);
            }
        }
        let expires = now.saturating_add(RECEIVED_HOLD_SECONDS * 1_000_000_000);
        let name = ReplicaId::new_random(b"received upload")
            .to_string()
            .replace('-', "");
        write_content_lock(&self.dmv, &format!("{PREFIX}{name}"), expires, roots)
    }

    /// Lets go of each upload whose roots are all among `named` (the ids a
    /// ref update just made refs point to): the refs keep them now.
    pub fn release_received(&self, named: &[ObjectId]) -> RepoResult<()> {
        let named: HashSet<&ObjectId> = named.iter().collect();
        for lock in self.received_locks()? {
            if lock.ids.iter().all(|r| named.contains(r)) {
                match std::fs::remove_file(&lock.path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(RepoError::io(&lock.path, e))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The uploads' locks among the content locks.
    fn received_locks(&self) -> RepoResult<Vec<ContentLock>> {
        let mut locks = content_locks(&self.dmv)?;
        locks.retain(|lock| {
            lock.path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(PREFIX))
        });
        Ok(locks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Repository;
    use dmv_store::ObjectKind;

    fn id(n: u8) -> ObjectId {
        ObjectId::hash(ObjectKind::Commit, &[n])
    }

    #[test]
    fn an_upload_is_let_go_only_when_a_ref_update_names_all_its_roots_or_it_expired() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let m = repo.maintenance();
        m.hold_received(&[id(1)]).unwrap();
        m.hold_received(&[id(2), id(3)]).unwrap();
        m.hold_received(&[]).unwrap();
        assert_eq!(m.received_locks().unwrap().len(), 2);
        let locked = m.locked_content().unwrap();
        assert!((1..=3).all(|n| locked.contains(&id(n))));

        // Naming one root of the second upload lets go of the first only.
        m.release_received(&[id(1), id(2)]).unwrap();
        let left = m.received_locks().unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].ids, [id(2), id(3)]);

        // An expired lock goes when the next upload is held; gc no longer counts it.
        std::fs::write(&left[0].path, format!("1\n{}\n", id(2).to_hex())).unwrap();
        m.hold_received(&[id(4)]).unwrap();
        let left = m.received_locks().unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].ids, [id(4)]);
        assert!(!m.locked_content().unwrap().contains(&id(2)));
    }
}
