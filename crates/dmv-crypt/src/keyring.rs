//! The repository key, by epoch: what seals and opens every object and
//! keys every name of an encrypted remote. Rotation adds an epoch; the
//! newest seals, every epoch still opens what it sealed.

use std::fmt;

use zeroize::{Zeroize, Zeroizing};

use crate::error::{Error, Result};
use crate::random::random_bytes;

/// `DMVK`: the start of a keyring's encoding.
pub const KEYRING_MAGIC: &[u8; 4] = b"DMVK";
/// The keyring encoding's version.
pub const KEYRING_VERSION: u8 = 1;
/// The epoch of a keyring's first key.
pub const FIRST_EPOCH: u32 = 1;

/// The subkey that keys the names of a remote (the oldest epoch's only).
const NAMES_CONTEXT: &str = "dmv 2026-12 encrypted remote: names";
/// The subkey that each object's file key is derived from.
const DATA_CONTEXT: &str = "dmv 2026-12 encrypted remote: data";

/// Magic, version, count.
pub(crate) const HEADER_LEN: usize = 9;
/// Epoch number and key.
pub(crate) const ENTRY_LEN: usize = 36;
const WHAT: &str = "a keyring";

/// One epoch's key and the subkeys derived from it, wiped when dropped.
#[derive(Clone)]
struct Epoch {
    number: u32,
    root: [u8; 32],
    names: [u8; 32],
    data: [u8; 32],
}

impl Epoch {
    fn new(number: u32, root: [u8; 32]) -> Epoch {
        Epoch {
            number,
            root,
            names: blake3::derive_key(NAMES_CONTEXT, &root),
            data: blake3::derive_key(DATA_CONTEXT, &root),
        }
    }
}

impl Zeroize for Epoch {
    fn zeroize(&mut self) {
        self.root.zeroize();
        self.names.zeroize();
        self.data.zeroize();
    }
}

impl Drop for Epoch {
    fn drop(&mut self) {
        self.zeroize();
    }
}

impl zeroize::ZeroizeOnDrop for Epoch {}

/// The repository key of an encrypted remote: one or more epochs, each a
/// 32-byte random key, in ascending order.
///
/// Names are keyed by the oldest epoch, so they stay the same across a
/// rotation and deduplication keeps working; a rewrite of the remote makes
/// a fresh keyring instead. Objects are sealed by the newest epoch.
#[derive(Clone)]
pub struct Keyring {
    /// Never empty, strictly ascending by number.
    epochs: Vec<Epoch>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Only the epochs: a key in a log line is a leaked key.
        f.debug_struct("Keyring")
            .field("epochs", &self.epochs().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Keyring {
    /// A new keyring of one random key, epoch [`FIRST_EPOCH`].
    pub fn generate() -> Result<Keyring> {
        let root = Zeroizing::new(random_bytes::<32>()?);
        Ok(Keyring {
            epochs: vec![Epoch::new(FIRST_EPOCH, *root)],
        })
    }

    /// A keyring of the given `(epoch, key)` pairs, which must be strictly
    /// ascending by epoch and at least one.
    pub fn from_epochs(epochs: &[(u32, [u8; 32])]) -> Result<Keyring> {
        if epochs.is_empty() {
            return Err(damaged("it holds no key"));
        }
        if epochs.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(damaged("its epochs are repeated or out of order"));
        }
        Ok(Keyring {
            epochs: epochs.iter().map(|(n, k)| Epoch::new(*n, *k)).collect(),
        })
    }

    /// Adds a new random key as the epoch after the newest, which seals
    /// from now on; returns its number.
    pub fn rotate(&mut self) -> Result<u32> {
        let root = Zeroizing::new(random_bytes::<32>()?);
        self.rotate_to(*root)
    }

    fn rotate_to(&mut self, root: [u8; 32]) -> Result<u32> {
        let next = self
            .newest_epoch()
            .checked_add(1)
            .ok_or(Error::NoEpochLeft)?;
        self.epochs.push(Epoch::new(next, root));
        Ok(next)
    }

    /// The epochs held, oldest first.
    pub fn epochs(&self) -> impl Iterator<Item = u32> + '_ {
        self.epochs.iter().map(|e| e.number)
    }

    /// The epoch that seals.
    pub fn newest_epoch(&self) -> u32 {
        self.newest().number
    }

    /// The encoding: `DMVK`, version 1, u32 LE count, then per epoch u32 LE
    /// epoch and its 32-byte key. Secret: wiped when dropped.
    pub fn encode(&self) -> Zeroizing<Vec<u8>> {
        let mut out = Zeroizing::new(Vec::with_capacity(
            HEADER_LEN + ENTRY_LEN * self.epochs.len(),
        ));
        out.extend_from_slice(KEYRING_MAGIC);
        out.push(KEYRING_VERSION);
        // The count fits: only `from_epochs`, `decode` and `rotate` add
        // epochs, and each epoch number is a distinct u32.
        out.extend_from_slice(&(self.epochs.len() as u32).to_le_bytes());
        for e in &self.epochs {
            out.extend_from_slice(&e.number.to_le_bytes());
            out.extend_from_slice(&e.root);
        }
        out
    }

    /// Reads an encoding made by [`Keyring::encode`], refusing more than
    /// `max_epochs` epochs before it sizes anything, repeated or unordered
    /// epochs, and bytes after the last epoch.
    pub fn decode(bytes: &[u8], max_epochs: u32) -> Result<Keyring> {
        if bytes.get(..4) != Some(KEYRING_MAGIC.as_slice()) {
            return Err(Error::NotOurs { what: WHAT });
        }
        let Some(header) = bytes.get(..HEADER_LEN) else {
            return Err(damaged("it is cut short"));
        };
        match header[4] {
            KEYRING_VERSION => {}
            0 => return Err(damaged("its version is 0")),
            version => {
                return Err(Error::NewerFormat {
                    what: WHAT,
                    version,
                })
            }
        }
        let count = u32::from_le_bytes([header[5], header[6], header[7], header[8]]);
        if count == 0 {
            return Err(damaged("it holds no key"));
        }
        if count > max_epochs {
            return Err(Error::TooManyEpochs {
                count,
                budget: max_epochs,
            });
        }
        let body = &bytes[HEADER_LEN..];
        let want = ENTRY_LEN as u64 * u64::from(count);
        if (body.len() as u64) < want {
            return Err(damaged("it is cut short"));
        }
        if body.len() as u64 > want {
            return Err(damaged("bytes follow its last key"));
        }
        let mut epochs: Vec<Epoch> = Vec::new();
        for entry in body.chunks_exact(ENTRY_LEN) {
            let number = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]);
            if epochs.last().is_some_and(|last| last.number >= number) {
                return Err(damaged("its epochs are repeated or out of order"));
            }
            let mut root = Zeroizing::new([0u8; 32]);
            root.copy_from_slice(&entry[4..]);
            epochs.push(Epoch::new(number, *root));
        }
        Ok(Keyring { epochs })
    }

    fn newest(&self) -> &Epoch {
        // `epochs` is never empty (every constructor checks).
        &self.epochs[self.epochs.len() - 1]
    }

    /// The key of every name: the oldest epoch's names subkey.
    pub(crate) fn names_key(&self) -> &[u8; 32] {
        &self.epochs[0].names
    }

    /// The newest epoch and its data subkey, which seal.
    pub(crate) fn sealing_key(&self) -> (u32, &[u8; 32]) {
        let e = self.newest();
        (e.number, &e.data)
    }

    /// The data subkey of `epoch`, which opens what it sealed.
    pub(crate) fn data_key(&self, epoch: u32) -> Result<&[u8; 32]> {
        self.epochs
            .binary_search_by_key(&epoch, |e| e.number)
            .map(|i| &self.epochs[i].data)
            .map_err(|_| Error::UnknownEpoch { epoch })
    }
}

fn damaged(why: &'static str) -> Error {
    Error::Damaged { what: WHAT, why }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(pairs: &[(u32, u8)]) -> Keyring {
        let pairs: Vec<(u32, [u8; 32])> = pairs.iter().map(|&(n, b)| (n, [b; 32])).collect();
        Keyring::from_epochs(&pairs).unwrap()
    }

    #[test]
    fn round_trips_and_rotates() {
        let mut k = ring(&[(1, 7)]);
        assert_eq!(k.rotate_to([9; 32]).unwrap(), 2);
        assert_eq!(k.newest_epoch(), 2);
        let back = Keyring::decode(&k.encode(), 2).unwrap();
        assert_eq!(back.epochs().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(back.encode(), k.encode());
        // Names stay with the oldest epoch; sealing moves to the newest.
        assert_eq!(back.names_key(), ring(&[(1, 7)]).names_key());
        assert_eq!(back.sealing_key().0, 2);
        assert_eq!(
            back.data_key(1).unwrap(),
            ring(&[(1, 7)]).data_key(1).unwrap()
        );
        assert!(matches!(
            back.data_key(3),
            Err(Error::UnknownEpoch { epoch: 3 })
        ));
        let mut last = ring(&[(u32::MAX, 1)]);
        assert!(matches!(last.rotate_to([2; 32]), Err(Error::NoEpochLeft)));
    }

    #[test]
    fn subkeys_differ_from_each_other_and_the_root() {
        let k = ring(&[(1, 7)]);
        let e = &k.epochs[0];
        assert_ne!(e.names, e.data);
        assert_ne!(e.names, e.root);
        assert_ne!(e.data, e.root);
    }

    #[test]
    fn decode_refuses_what_encode_never_writes() {
        let good = ring(&[(1, 7), (5, 8)]).encode().to_vec();
        let with = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = good.clone();
            f(&mut b);
            Keyring::decode(&b, 10).unwrap_err().to_string()
        };
        assert_eq!(with(&|b| b[0] = b'X'), "not a keyring");
        assert_eq!(with(&|b| b.truncate(3)), "not a keyring");
        assert_eq!(
            with(&|b| b[4] = 2),
            "a keyring made by a newer version (format 2)"
        );
        assert_eq!(
            with(&|b| b[4] = 0),
            "a keyring is damaged: its version is 0"
        );
        assert_eq!(
            with(&|b| b.truncate(8)),
            "a keyring is damaged: it is cut short"
        );
        assert_eq!(
            with(&|b| b.truncate(50)),
            "a keyring is damaged: it is cut short"
        );
        assert_eq!(
            with(&|b| b.push(0)),
            "a keyring is damaged: bytes follow its last key"
        );
        assert_eq!(
            with(&|b| b[5..9].copy_from_slice(&0u32.to_le_bytes())),
            "a keyring is damaged: it holds no key"
        );
        assert_eq!(
            with(&|b| b[45..49].copy_from_slice(&1u32.to_le_bytes())),
            "a keyring is damaged: its epochs are repeated or out of order"
        );
        assert_eq!(
            with(&|b| b[45..49].copy_from_slice(&0u32.to_le_bytes())),
            "a keyring is damaged: its epochs are repeated or out of order"
        );
        // The count is judged against the budget before anything is sized.
        assert_eq!(
            with(&|b| b[5..9].copy_from_slice(&u32::MAX.to_le_bytes())),
            "the keyring holds 4294967295 epochs, over the budget of 10"
        );
        assert!(matches!(
            Keyring::decode(&good, 1),
            Err(Error::TooManyEpochs {
                count: 2,
                budget: 1
            })
        ));
        assert!(Keyring::from_epochs(&[]).is_err());
        assert!(Keyring::from_epochs(&[(2, [0; 32]), (2, [1; 32])]).is_err());
    }

    #[test]
    fn debug_shows_no_key() {
        let text = format!("{:?}", ring(&[(1, 0xab)]));
        assert!(
            !text.contains("171") && !text.to_lowercase().contains("ab"),
            "{text}"
        );
        assert!(text.contains("epochs: [1]"), "{text}");
    }

    #[test]
    fn epoch_keys_are_wiped_on_drop() {
        let mut slot = std::mem::ManuallyDrop::new(Epoch::new(1, [0x5a; 32]));
        assert_ne!(slot.root, [0; 32]);
        // SAFETY: the epoch is dropped in place once and never used again
        // but to read its plain byte arrays, which drop leaves in place.
        unsafe { std::ptr::drop_in_place(&mut *slot) };
        let after = unsafe { std::ptr::read_volatile(&*slot) };
        let bytes: Vec<u8> = [after.root, after.names, after.data].concat();
        std::mem::forget(after);
        assert!(bytes.iter().all(|&b| b == 0));
    }
}
