//! An encrypted repository's keyring, kept in the bucket wrapped once per
//! device key (`keys/device-<public key>`) and per passphrase
//! (`keys/passphrase-<random>`): unlocking it at open, and adding and
//! removing wrapped copies. The wrapped keys are not sealed (they are
//! what opens the seal); their names show which device keys may open the
//! repository, which is no secret of the repository's content.

use dmv_crypt::{
    unwrap_with_identity, unwrap_with_passphrase, wrap_for, wrap_kind, wrap_with_passphrase,
    wrapped_epochs, Keyring, PassphraseCost, Recipient, WrapKind,
};

use crate::config::{fingerprint, BucketConfig};
use crate::error::{BucketError, BucketResult};
use crate::layout::KEYS_PREFIX;
use crate::objects::Objects;
use crate::sealing::BucketKeys;
use crate::url::Conn;

/// At most this many wrapped keys are read (a repository has one per
/// device and passphrase).
pub const MAX_KEYS: usize = 256;
/// A wrapped keyring is under 100 bytes per epoch: larger is refused unread.
const MAX_KEY_SIZE: u64 = 64 << 10;
/// Epochs a keyring may hold (one per rotation).
pub const MAX_EPOCHS: u32 = 1024;
/// The most Argon2id work a wrapped passphrase key may ask for before it
/// is tried: 1 GiB, 16 passes, 16 lanes.
pub const PASSPHRASE_BUDGET: PassphraseCost = PassphraseCost {
    memory_kib: 1 << 20,
    iterations: 16,
    lanes: 16,
};
const DEVICE: &str = "device-";
const PASSPHRASE: &str = "passphrase-";

/// One wrapped copy of the keyring, as `dmv keys list` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEntry {
    /// Its name in `keys/` (what `remove` takes).
    pub name: String,
    /// The device's public key, or None for a passphrase.
    pub device: Option<String>,
}

/// A new keyring and its wrapped copies (object key, body), for a
/// repository about to be created.
pub(crate) fn new_wrapped(keys: &BucketKeys, url: &str) -> BucketResult<crate::config::Wrapped> {
    if keys.identities.is_empty() && keys.passphrase.is_none() {
        return Err(BucketError::Keys {
            url: url.to_string(),
            detail: "an encrypted repository needs a device key or a passphrase to be made".into(),
        });
    }
    let keyring = Keyring::generate().map_err(|e| crypto(url, e))?;
    let mut wrapped = Vec::new();
    for identity in &keys.identities {
        wrapped.push(wrap_device(&keyring, &identity.recipient(), url)?);
    }
    if let Some(p) = &keys.passphrase {
        wrapped.push(wrap_passphrase(&keyring, p, url)?);
    }
    Ok((keyring, wrapped))
}

fn wrap_device(
    keyring: &Keyring,
    recipient: &Recipient,
    url: &str,
) -> BucketResult<(String, Vec<u8>)> {
    let body = wrap_for(recipient, keyring).map_err(|e| crypto(url, e))?;
    let name = format!("{KEYS_PREFIX}{DEVICE}{}", hex(&recipient.to_bytes()));
    Ok((name, body))
}

fn wrap_passphrase(
    keyring: &Keyring,
    passphrase: &str,
    url: &str,
) -> BucketResult<(String, Vec<u8>)> {
    let body = wrap_with_passphrase(passphrase.as_bytes(), keyring, &PassphraseCost::default())
        .map_err(|e| crypto(url, e))?;
    let name = format!("{KEYS_PREFIX}{PASSPHRASE}{}", crate::config::new_token());
    Ok((name, body))
}

/// Opens the keyring of the encrypted repository `config` describes with
/// one of `keys`, or says what is needed.
pub(crate) fn unlock(
    conn: &Conn,
    config: &BucketConfig,
    keys: &BucketKeys,
) -> BucketResult<Keyring> {
    let url = &conn.target.url;
    let want = config.sealed.as_ref().map(|s| s.keyring.as_str());
    let stored = read_all(conn)?;
    let tried_passphrase = keys.passphrase.is_some();
    for (_, body) in &stored {
        let opened = match wrap_kind(body) {
            Ok(WrapKind::Device(id)) => keys
                .identities
                .iter()
                .find(|i| i.recipient().key_id() == id)
                .map(|i| unwrap_with_identity(i, body, MAX_EPOCHS)),
            Ok(WrapKind::Passphrase(_)) => keys.passphrase.as_ref().map(|p| {
                unwrap_with_passphrase(p.as_bytes(), body, &PASSPHRASE_BUDGET, MAX_EPOCHS)
            }),
            Err(_) => None,
        };
        match opened {
            Some(Ok(keyring)) if Some(fingerprint(&keyring).as_str()) == want => {
                return Ok(keyring)
            }
            // A copy of another keyring (a lost creation race), a wrong passphrase: the next.
            _ => continue,
        }
    }
    let mine: Vec<String> = keys
        .identities
        .iter()
        .map(|i| i.recipient().to_text())
        .collect();
    let mut detail = "the repository is encrypted, and ".to_string();
    detail.push_str(&match (mine.as_slice(), tried_passphrase) {
        ([], false) => "no key was given to open it".to_string(),
        (ids, false) => format!(
            "none of its keys is for this device's key ({})",
            ids.join(", ")
        ),
        ([], true) => "the passphrase does not open it".to_string(),
        (ids, true) => format!(
            "neither this device's key ({}) nor the passphrase opens it",
            ids.join(", ")
        ),
    });
    Err(BucketError::Locked {
        url: url.clone(),
        detail,
    })
}

/// Every wrapped key in the bucket: (object key, body).
fn read_all(conn: &Conn) -> BucketResult<Vec<(String, Vec<u8>)>> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("reading the repository's keys", async move {
        let listed = objects
            .list(KEYS_PREFIX)
            .await
            .map_err(|e| target.classify(e, "listing the repository's keys"))?;
        if listed.len() > MAX_KEYS {
            return Err(target.damaged(format!(
                "{KEYS_PREFIX} holds {} keys, more than {MAX_KEYS}",
                listed.len()
            )));
        }
        let mut out = Vec::new();
        for e in listed {
            if e.len > MAX_KEY_SIZE {
                return Err(target.damaged(format!(
                    "{} is {} bytes, more than a wrapped key can be",
                    e.key, e.len
                )));
            }
            match objects.get_range(&e.key, 0..e.len.max(1)).await {
                Ok(body) => out.push((e.key, body)),
                Err(err) if err.kind() == opendal::ErrorKind::NotFound => {}
                Err(err) => return Err(target.classify(err, &format!("reading {}", e.key))),
            }
        }
        Ok(out)
    })
}

/// The wrapped copies of the keyring.
pub(crate) fn list(conn: &Conn) -> BucketResult<Vec<KeyEntry>> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    let listed = conn.run("listing the repository's keys", async move {
        objects
            .list(KEYS_PREFIX)
            .await
            .map_err(|e| target.classify(e, "listing the repository's keys"))
    })?;
    let mut out: Vec<KeyEntry> = listed
        .into_iter()
        .filter_map(|e| {
            let name = e.key.strip_prefix(KEYS_PREFIX)?.to_string();
            let device = name
                .strip_prefix(DEVICE)
                .and_then(unhex)
                .map(|b| Recipient::from_bytes(b).to_text());
            Some(KeyEntry { name, device })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Stores a copy of `keyring` wrapped for `recipient`, or for `passphrase`.
pub(crate) fn add(
    conn: &Conn,
    keyring: &Keyring,
    recipient: Option<&Recipient>,
    passphrase: Option<&str>,
) -> BucketResult<KeyEntry> {
    let url = &conn.target.url;
    let (key, body) = match (recipient, passphrase) {
        (Some(r), _) => wrap_device(keyring, r, url)?,
        (None, Some(p)) => wrap_passphrase(keyring, p, url)?,
        (None, None) => {
            return Err(BucketError::Keys {
                url: url.clone(),
                detail: "say whom the key is for: a device's public key or a passphrase".into(),
            })
        }
    };
    let (objects, target, at) = (Objects::of(conn), conn.target.clone(), key.clone());
    conn.run("adding a key", async move {
        objects
            .put(&at, body)
            .await
            .map_err(|e| target.classify(e, &format!("writing {at}")))
    })?;
    Ok(KeyEntry {
        device: recipient.map(Recipient::to_text),
        name: key[KEYS_PREFIX.len()..].to_string(),
    })
}

/// Removes the wrapped copy `name` (as [`list`] gives it, or a device's
/// public key), unless it is the last.
pub(crate) fn remove(conn: &Conn, name: &str) -> BucketResult<KeyEntry> {
    let url = &conn.target.url;
    let all = list(conn)?;
    let found = all
        .iter()
        .find(|k| k.name == name || k.device.as_deref() == Some(name))
        .cloned()
        .ok_or_else(|| BucketError::NoSuchKey {
            url: url.clone(),
            name: name.to_string(),
        })?;
    if all.len() == 1 {
        return Err(BucketError::Keys {
            url: url.clone(),
            detail: format!(
                "{name} is the repository's only key: without it nothing could open the repository; add another first"
            ),
        });
    }
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    let key = format!("{KEYS_PREFIX}{}", found.name);
    conn.run("removing a key", async move {
        objects
            .delete(&key)
            .await
            .map_err(|e| target.classify(e, &format!("removing {key}")))
    })?;
    Ok(found)
}

fn crypto(url: &str, e: dmv_crypt::Error) -> BucketError {
    BucketError::Keys {
        url: url.to_string(),
        detail: e.to_string(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What a rotation did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotated {
    /// The new epoch, which seals everything written from now on.
    pub epoch: u32,
    /// The copies wrapped again with the new epoch.
    pub rewrapped: Vec<KeyEntry>,
    /// Passphrase copies that could not be wrapped again (their passphrase
    /// was not given), removed so that they open nothing written from now on.
    pub removed: Vec<KeyEntry>,
}

/// Adds a new epoch to the keyring and wraps it again for every device key
/// and for the passphrase copies `passphrase` opens; the other passphrase
/// copies are removed. What was sealed before stays sealed with the epochs
/// before (readable by whoever kept them); what is written after is sealed
/// with the new one. Cut short, run again: every copy then holds the
/// newest keyring.
pub(crate) fn rotate(
    conn: &Conn,
    keyring: &Keyring,
    passphrase: Option<&str>,
) -> BucketResult<Rotated> {
    let url = &conn.target.url;
    let mut rotated = keyring.clone();
    if rotated.epochs().count() >= MAX_EPOCHS as usize {
        return Err(BucketError::Keys {
            url: url.clone(),
            detail: format!("the key has been rotated {MAX_EPOCHS} times, as often as it may be"),
        });
    }
    let stored = read_all(conn)?;
    // A rotation cut short left some copies holding an epoch this keyring
    // lacks: rotating from here would make a second, different key of that
    // epoch, and what was sealed with either would open for half the
    // devices. Only a device whose copy is the newest may go on.
    let held = keyring.epochs().count() as u32;
    let ahead: Vec<&str> = stored
        .iter()
        .filter(|(_, body)| wrapped_epochs(body).is_ok_and(|n| n > held))
        .map(|(key, _)| &key[KEYS_PREFIX.len()..])
        .collect();
    if !ahead.is_empty() {
        return Err(BucketError::Keys {
            url: url.clone(),
            detail: format!(
                "a rotation was cut short: {} hold a newer key than the one this device opened, so only a device holding one of them may rotate now (this device reads what was sealed before it)",
                ahead.join(", ")
            ),
        });
    }
    let epoch = rotated.rotate().map_err(|e| crypto(url, e))?;
    let want = fingerprint(keyring);
    let mut writes = Vec::new();
    let mut removed = Vec::new();
    for (key, body) in stored {
        let name = key[KEYS_PREFIX.len()..].to_string();
        let device = name
            .strip_prefix(DEVICE)
            .and_then(unhex)
            .map(Recipient::from_bytes);
        let entry = KeyEntry {
            name: name.clone(),
            device: device.map(|r| r.to_text()),
        };
        match (device, wrap_kind(&body)) {
            (Some(r), Ok(WrapKind::Device(id))) if id == r.key_id() => {
                let body = wrap_for(&r, &rotated).map_err(|e| crypto(url, e))?;
                writes.push((key, Some(body), entry));
            }
            (None, Ok(WrapKind::Passphrase(_))) => {
                let opens = passphrase.is_some_and(|p| {
                    unwrap_with_passphrase(p.as_bytes(), &body, &PASSPHRASE_BUDGET, MAX_EPOCHS)
                        .is_ok_and(|k| fingerprint(&k) == want)
                });
                match (opens, passphrase) {
                    (true, Some(p)) => {
                        let body = wrap_with_passphrase(
                            p.as_bytes(),
                            &rotated,
                            &PassphraseCost::default(),
                        )
                        .map_err(|e| crypto(url, e))?;
                        writes.push((key, Some(body), entry));
                    }
                    _ => {
                        writes.push((key, None, entry.clone()));
                        removed.push(entry);
                    }
                }
            }
            // Not a copy this dmv made: left as it is.
            _ => {}
        }
    }
    let rewrapped = writes
        .iter()
        .filter(|(_, body, _)| body.is_some())
        .map(|(_, _, e)| e.clone())
        .collect();
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("rotating the key", async move {
        // Device copies first: a cut-short rotation never leaves the
        // repository without a copy of its newest key.
        let (rewrites, removals): (Vec<_>, Vec<_>) =
            writes.into_iter().partition(|w| w.1.is_some());
        for (key, body, _) in rewrites.into_iter().chain(removals) {
            let done = match body {
                Some(body) => objects.put(&key, body).await,
                None => objects.delete(&key).await,
            };
            done.map_err(|e| target.classify(e, &format!("rewriting {key}")))?;
            dmv_store::failpoint("bucket-key-rewrapped");
        }
        Ok(())
    })?;
    Ok(Rotated {
        epoch,
        rewrapped,
        removed,
    })
}
