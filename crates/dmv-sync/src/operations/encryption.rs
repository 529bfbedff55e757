//! The wrapped copies of an encrypted bucket remote's key (`dmv keys`).

use dmv_bucket::{Bucket, BucketError, KeyEntry, Recipient};
use dmv_repo::Repository;
use zeroize::Zeroizing;

use crate::operations::named_remotes::NamedRemote;
use crate::operations::remote_spec::Transport;
use crate::protocol::error::{SyncError, SyncResult};

/// What `dmv keys` changes in a remote's keys.
pub enum KeysChange {
    /// Lets this device key open the repository.
    AddRecipient(Recipient),
    /// Lets this passphrase open it.
    AddPassphrase(Zeroizing<String>),
    /// Takes away a wrapped copy (by name or device key).
    Remove(String),
}

/// Seals what is written to the encrypted bucket `remote` from now on with
/// a new key, wrapped again for every device and for the passphrase copies
/// `DMV_PASSPHRASE` opens (the others are removed).
pub fn rotate_key(_repo: &Repository, remote: &NamedRemote) -> SyncResult<dmv_bucket::Rotated> {
    let bucket = open_bucket(remote)?;
    let passphrase = std::env::var(crate::operations::device_keys::PASSPHRASE_VAR)
        .ok()
        .filter(|p| !p.is_empty())
        .map(Zeroizing::new);
    Ok(bucket.rotate_key(passphrase.as_deref().map(String::as_str))?)
}

/// Seals again with the newest key what the encrypted bucket `remote`
/// stores sealed with older ones (after [`rotate_key`]: a removed device
/// that kept the old key then reads nothing there). Cut short, it is
/// finished by running it again; `progress(done, total)` in stored
/// bytes.
pub fn reseal_remote(
    _repo: &Repository,
    remote: &NamedRemote,
    progress: &mut dyn FnMut(u64, u64),
) -> SyncResult<dmv_bucket::Resealed> {
    // Opened anew: a handle opened before a rotation seals with the old key.
    Ok(open_bucket(remote)?.reseal(progress)?)
}

/// The wrapped copies of the key of the encrypted bucket `remote`.
pub fn list_keys(_repo: &Repository, remote: &NamedRemote) -> SyncResult<Vec<KeyEntry>> {
    Ok(open_bucket(remote)?.keys()?)
}

/// Adds or removes a wrapped copy of the key of the encrypted bucket `remote`.
pub fn change_keys(
    _repo: &Repository,
    remote: &NamedRemote,
    change: KeysChange,
) -> SyncResult<KeyEntry> {
    let bucket = open_bucket(remote)?;
    Ok(match change {
        KeysChange::AddRecipient(r) => bucket.add_key(Some(&r), None)?,
        KeysChange::AddPassphrase(p) => bucket.add_key(None, Some(&p))?,
        KeysChange::Remove(name) => bucket.remove_key(&name)?,
    })
}

fn open_bucket(remote: &NamedRemote) -> SyncResult<Bucket> {
    let spec = &remote.spec;
    let hub = match spec.transport {
        Transport::S3(_) => None,
        #[cfg(feature = "http")]
        Transport::Http { .. } => spec.sealed_hub()?,
        _ => None,
    };
    if hub.is_none() && !matches!(spec.transport, Transport::S3(_)) {
        return Err(SyncError::Bucket(BucketError::Keys {
            url: spec.url.clone(),
            detail: "keys belong to encrypted remotes (a bucket, or a dmv server that keeps the repository sealed); this remote is not one".into(),
        }));
    }
    spec.open_bucket(hub, None)
}
