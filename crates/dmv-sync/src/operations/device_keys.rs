//! This device's key for encrypted bucket remotes (issue 68), kept 0600
//! in the user's config folder and made at first need, and the passphrase
//! a person gives in `DMV_PASSPHRASE`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dmv_bucket::{BucketKeys, Identity, KnownKeyrings};
use dmv_repo::RepoError;
use zeroize::Zeroizing;

use crate::protocol::error::{SyncError, SyncResult};

/// The environment variable a passphrase is read from.
pub const PASSPHRASE_VAR: &str = "DMV_PASSPHRASE";
/// A device key file is one line of about 80 bytes: larger is refused unread.
const MAX_IDENTITY_FILE: u64 = 4 << 10;

/// Where this device's key is kept: `$XDG_CONFIG_HOME/dmv/identity`, else
/// `~/.config/dmv/identity`.
pub fn device_key_path() -> Option<PathBuf> {
    dmv_repo::global_path().map(|p| p.with_file_name("identity"))
}

/// This device's key; made (and kept 0600) if there is none and `create`.
pub fn device_key(create: bool) -> SyncResult<Option<Identity>> {
    let Some(path) = device_key_path() else {
        return Ok(None);
    };
    match read_identity(&path) {
        Ok(identity) => Ok(Some(identity)),
        Err(SyncError::Repo(RepoError::Io { cause, .. }))
            if cause.kind() == std::io::ErrorKind::NotFound && create =>
        {
            let identity = Identity::generate().map_err(|e| key_error(&path, e))?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| RepoError::io(dir, e))?;
            }
            dmv_repo::write_atomic_private(&path, identity.to_text().as_bytes())?;
            Ok(Some(identity))
        }
        Err(SyncError::Repo(RepoError::Io { cause, .. }))
            if cause.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// A device key from a file (`dmv clone --identity FILE`, or this device's).
pub fn read_identity(path: &Path) -> SyncResult<Identity> {
    let meta = std::fs::metadata(path).map_err(|e| RepoError::io(path, e))?;
    if meta.len() > MAX_IDENTITY_FILE {
        return Err(key_error(path, "larger than a device key file can be"));
    }
    let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| RepoError::io(path, e))?);
    Identity::parse(text.trim()).map_err(|e| key_error(path, e))
}

fn key_error(path: &Path, e: impl std::fmt::Display) -> SyncError {
    SyncError::Repo(RepoError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("not a dmv device key: {e}"),
    })
}

/// `keys` with this device's key (made first if the remote is to be
/// encrypted), the passphrase in `DMV_PASSPHRASE`, unless they are
/// already there, and the keyrings this device has opened before.
pub fn with_device_keys(mut keys: BucketKeys) -> SyncResult<BucketKeys> {
    if keys.known.is_none() {
        keys.known = known_keyrings_path()
            .map(|path| Arc::new(KnownKeyringsFile { path }) as Arc<dyn KnownKeyrings>);
    }
    if let Some(identity) = device_key(keys.encrypt)? {
        let recipient = identity.recipient();
        if !keys.identities.iter().any(|i| i.recipient() == recipient) {
            keys.identities.push(Arc::new(identity));
        }
    }
    if keys.passphrase.is_none() {
        keys.passphrase = std::env::var(PASSPHRASE_VAR)
            .ok()
            .filter(|p| !p.is_empty())
            .map(|p| Arc::new(Zeroizing::new(p)));
    }
    Ok(keys)
}

/// At most this many repositories are remembered (a line of 97 bytes each).
const MAX_KNOWN_KEYRINGS: usize = 100_000;
/// A known-keyrings file larger than this is refused unread.
const MAX_KNOWN_KEYRINGS_FILE: u64 = MAX_KNOWN_KEYRINGS as u64 * 100;

/// Where the keyrings this device opened are remembered:
/// `$XDG_CONFIG_HOME/dmv/known-keyrings`, one `<repository id>
/// <fingerprint>` per line.
pub fn known_keyrings_path() -> Option<PathBuf> {
    dmv_repo::global_path().map(|p| p.with_file_name("known-keyrings"))
}

/// The keyrings this device has opened, in [`known_keyrings_path`].
struct KnownKeyringsFile {
    path: PathBuf,
}

impl KnownKeyrings for KnownKeyringsFile {
    fn check(&self, id: &str, fingerprint: &str) -> Result<(), String> {
        let word =
            |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !word(id) || !word(fingerprint) {
            return Err(format!(
                "the repository's id {id:?} or keyring {fingerprint:?} is not a word"
            ));
        }
        let text = match std::fs::metadata(&self.path) {
            Ok(meta) if meta.len() > MAX_KNOWN_KEYRINGS_FILE => {
                return Err(format!("{} is larger than it can be", self.path.display()))
            }
            Ok(_) => match std::fs::read(&self.path) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        let seen = text.lines().find_map(|l| {
            let (known_id, known) = l.split_once(' ')?;
            (known_id == id).then_some(known)
        });
        match seen {
            Some(known) if known == fingerprint => Ok(()),
            Some(known) => Err(format!(
                "the repository's key is not the one this device first opened it with (its config names keyring {fingerprint}, this device knows {known}, in {}): whoever can write the bucket may have replaced it, so nothing was read or sent; if its owners really made a new key, remove that line",
                self.path.display()
            )),
            None => {
                // Full, the oldest repositories are forgotten (they are
                // trusted anew on their next opening), not every new one refused.
                let lines: Vec<&str> = text.lines().collect();
                let keep = lines.len().min(MAX_KNOWN_KEYRINGS - 1);
                let mut text = lines[lines.len() - keep..].join("\n");
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!("{id} {fingerprint}\n"));
                if let Some(dir) = self.path.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                }
                dmv_repo::write_atomic(&self.path, text.as_bytes()).map_err(|e| e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_key_file_past_its_budget_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("identity");
        let identity = Identity::generate().unwrap();
        std::fs::write(&path, identity.to_text().as_bytes()).unwrap();
        assert_eq!(
            read_identity(&path).unwrap().recipient(),
            identity.recipient()
        );
        let mut big = identity.to_text().as_bytes().to_vec();
        big.resize(MAX_IDENTITY_FILE as usize + 1, b' ');
        std::fs::write(&path, &big).unwrap();
        let err = read_identity(&path).unwrap_err().to_string();
        assert!(err.contains("larger than a device key file"), "{err}");
        std::fs::write(&path, "DMV-SECRET-KEY-1 not a key").unwrap();
        assert!(read_identity(&path).is_err());
    }

    #[test]
    fn known_keyrings_are_trusted_first_then_held_to_within_a_bounded_file() {
        let dir = tempfile::tempdir().unwrap();
        let known = KnownKeyringsFile {
            path: dir.path().join("dmv").join("known-keyrings"),
        };
        known.check("repo-1", "abc").unwrap();
        known.check("repo-1", "abc").unwrap();
        let err = known.check("repo-1", "abd").unwrap_err();
        assert!(
            err.contains("not the one this device first opened"),
            "{err}"
        );
        known.check("repo-2", "def").unwrap();
        for (id, fingerprint) in [("repo 3", "x"), ("repo-3", "x\ny"), ("", "x")] {
            assert!(
                known.check(id, fingerprint).is_err(),
                "{id:?} {fingerprint:?}"
            );
        }
        let text = std::fs::read_to_string(&known.path).unwrap();
        assert_eq!(text, "repo-1 abc\nrepo-2 def\n");

        // Full, the oldest is forgotten and the file stays within its bound.
        let full: String = (0..MAX_KNOWN_KEYRINGS)
            .map(|i| format!("r{i:031} {:064}\n", 0))
            .collect();
        assert!(full.len() as u64 <= MAX_KNOWN_KEYRINGS_FILE);
        std::fs::write(&known.path, &full).unwrap();
        known.check("newest", "f00").unwrap();
        let text = std::fs::read_to_string(&known.path).unwrap();
        assert_eq!(text.lines().count(), MAX_KNOWN_KEYRINGS);
        assert!(!text.contains(&format!("r{:031} ", 0)));
        assert!(text.ends_with("newest f00\n"));
        // The first one forgotten is trusted anew; r1 is still held.
        known.check(&format!("r{:031}", 0), "other").unwrap();
        assert!(known.check(&format!("r{:031}", 2), "other").is_err());

        // Past its bound, the file is refused unread.
        std::fs::write(
            &known.path,
            vec![b'a'; MAX_KNOWN_KEYRINGS_FILE as usize + 1],
        )
        .unwrap();
        let err = known.check("repo-1", "abc").unwrap_err();
        assert!(err.contains("larger than it can be"), "{err}");
    }
}
