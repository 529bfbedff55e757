//! What an encrypted repository's objects are called and hold in a bucket
//! the user does not trust (issue 68). [`crate::objects::Objects`] asks
//! this file for every key it sends and every body it writes or reads, so
//! the rest of the crate speaks of the plain layout (docs/object-storage.md)
//! and never sees a sealed byte.
//!
//! * **Keys.** The config (`dmv-repository.json`, which says the
//!   repository is encrypted) and the wrapped keyrings (`keys/…`) keep
//!   their names. A pack `packs/pack-<sum>.pack` and its `.idx` become
//!   `packs/<token>.p` and `.i`, the token being the keyed name of the
//!   pack's sum; every other key `dir/rest` becomes `dir/<keyed name of
//!   the whole key>.s`. The storage sees directories (what kind of thing an
//!   object is) and sizes, never an id, a path or a replica.
//! * **Bodies.** Everything but the config and the wrapped keyrings is
//!   sealed (`dmv_crypt::seal`: padded, 64 KiB segments each authenticated)
//!   with its stored key as associated data, so an object moved or copied
//!   under another name fails to open, as does a flipped byte.
//! * **Ranges.** A pack is read in ranges: only the segments holding the
//!   range are fetched, with the pack's header (fetched once, with the
//!   first range or on its own) and its sealed length (from the listing
//!   that found it, or a stat).
//!
//! Listings give stored keys, and callers hand them back to read or delete:
//! a stored key maps to itself. No plain key DMV makes has a stored key's
//! shape (`<64 hex>.s`, `.p`, `.i`), so the two never meet.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use dmv_crypt::{Header, Identity, Keyring, Recipient, SealedLayout, HEADER_LEN};
use dmv_store::ObjectId;
use zeroize::Zeroizing;

use crate::layout::{CONFIG_KEY, KEYS_PREFIX, PACKS_PREFIX};

/// The keys an encrypted repository is opened with, and whether a
/// repository created (or written to) must be encrypted.
#[derive(Clone, Default)]
pub struct BucketKeys {
    /// Device keys, tried in order.
    pub identities: Vec<Arc<Identity>>,
    /// A passphrase, tried after them.
    pub passphrase: Option<Arc<Zeroizing<String>>>,
    /// Create the repository encrypted (its key wrapped for every identity
    /// and the passphrase), and refuse to write to one that is not.
    pub encrypt: bool,
    /// The keyrings this device has opened repositories with, by
    /// repository id: an encrypted repository whose config names another
    /// keyring than the one first seen is refused before anything is read.
    pub known: Option<Arc<dyn KnownKeyrings>>,
}

/// Trust on first use of an encrypted repository's keyring (as ssh's
/// known hosts): anyone who can write the bucket can put a config and
/// keys of a keyring they know there, wrapped for this device's public
/// key, which the bucket shows.
pub trait KnownKeyrings: Send + Sync {
    /// Ok if `fingerprint` is the keyring first seen for the repository
    /// `id`, or none was (it is then remembered); else why not.
    fn check(&self, id: &str, fingerprint: &str) -> Result<(), String>;
}

impl std::fmt::Debug for BucketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self
            .identities
            .iter()
            .map(|i| i.recipient().to_text())
            .collect();
        f.debug_struct("BucketKeys")
            .field("identities", &ids)
            .field("passphrase", &self.passphrase.is_some())
            .field("encrypt", &self.encrypt)
            .finish()
    }
}

impl PartialEq for BucketKeys {
    fn eq(&self, other: &BucketKeys) -> bool {
        let ids = |k: &BucketKeys| -> Vec<Recipient> {
            k.identities.iter().map(|i| i.recipient()).collect()
        };
        ids(self) == ids(other)
            && self.passphrase.as_deref() == other.passphrase.as_deref()
            && self.encrypt == other.encrypt
            && self.known.is_some() == other.known.is_some()
    }
}

impl Eq for BucketKeys {}

/// A sealed pack body's suffix.
const PACK_SUFFIX: &str = ".p";
/// A sealed pack index's suffix.
const INDEX_SUFFIX: &str = ".i";
/// Any other sealed object's suffix.
const OTHER_SUFFIX: &str = ".s";
/// A range read this close to a pack's start fetches its header with it.
const HEADER_WITH_RANGE: u64 = 256 << 10;
/// Sealed lengths and headers of packs remembered per repository: beyond
/// this the oldest half is forgotten (a header is refetched, 25 bytes).
const REMEMBERED_PACKS: usize = 1 << 16;

/// The repository key and what was learnt of its packs.
pub(crate) struct Sealing {
    keyring: Keyring,
    packs: Mutex<HashMap<String, PackSeen>>,
}

/// What a listing, an upload or a read told of one sealed pack.
#[derive(Clone, Copy, Default)]
struct PackSeen {
    sealed_len: Option<u64>,
    header: Option<Header>,
}

/// Why a sealed body did not open: it was changed, cut, moved from another
/// key, or sealed with a key this keyring lacks.
#[derive(Debug)]
pub(crate) struct Unopened {
    pub key: String,
    pub detail: String,
}

impl RangePlan {
    /// Whether the plan trusts a header remembered from an earlier read.
    pub fn remembered_header(&self) -> bool {
        self.header.is_some()
    }
}

impl Sealing {
    pub fn new(keyring: Keyring) -> Sealing {
        Sealing {
            keyring,
            packs: Mutex::new(HashMap::new()),
        }
    }

    pub fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    /// Whether the object stored at `key` is sealed.
    pub fn seals(key: &str) -> bool {
        key != CONFIG_KEY && !key.starts_with(KEYS_PREFIX)
    }

    /// The name under which a pack with this sum is stored (its token).
    pub fn pack_token(&self, pack: &ObjectId) -> ObjectId {
        ObjectId(self.keyring.name(b"pack", &pack.0))
    }

    /// The key an object is stored under (see the file's comment).
    pub fn stored_key(&self, key: &str) -> String {
        if !Sealing::seals(key) || is_stored_shape(key) {
            return key.to_string();
        }
        if let Some(rest) = key.strip_prefix(PACKS_PREFIX) {
            let pack = |suffix: &str| {
                rest.strip_prefix("pack-")?
                    .strip_suffix(suffix)
                    .and_then(ObjectId::from_hex)
            };
            if let Some(sum) = pack(".pack") {
                return format!("{PACKS_PREFIX}{}{PACK_SUFFIX}", self.pack_token(&sum));
            }
            if let Some(sum) = pack(".idx") {
                return format!("{PACKS_PREFIX}{}{INDEX_SUFFIX}", self.pack_token(&sum));
            }
        }
        let dir = key.rfind('/').map_or("", |at| &key[..=at]);
        let name = self.keyring.name_hex(b"key", key.as_bytes());
        format!("{dir}{name}{OTHER_SUFFIX}")
    }

    /// The token of a stored index key (`packs/<token>.i`).
    pub fn index_token(key: &str) -> Option<ObjectId> {
        let rest = key.strip_prefix(PACKS_PREFIX)?;
        ObjectId::from_hex(rest.strip_suffix(INDEX_SUFFIX)?)
    }

    /// Whether a stored key is a pack's body.
    pub fn is_pack_body(key: &str) -> bool {
        key.starts_with(PACKS_PREFIX) && key.ends_with(PACK_SUFFIX)
    }

    /// Seals `body` for the stored key `key`.
    pub fn seal(&self, key: &str, body: &[u8]) -> Result<Vec<u8>, Unopened> {
        dmv_crypt::seal(&self.keyring, key.as_bytes(), body).map_err(|e| unopened(key, e))
    }

    /// Opens the whole sealed body stored at `key`.
    pub fn open(&self, key: &str, sealed: &[u8]) -> Result<Vec<u8>, Unopened> {
        dmv_crypt::open(&self.keyring, key.as_bytes(), sealed, sealed.len() as u64)
            .map_err(|e| unopened(key, e))
    }

    /// A streaming sealer of `len` bytes for `key` (a pack's upload): the
    /// sealed bytes collect in its `Vec`, taken part by part.
    pub fn sealer(&self, key: &str, len: u64) -> Result<dmv_crypt::Sealer<Vec<u8>>, Unopened> {
        let sealer = dmv_crypt::Sealer::new(&self.keyring, key.as_bytes(), len, Vec::new())
            .map_err(|e| unopened(key, e))?;
        self.remember(key, |seen| seen.sealed_len = Some(sealer.sealed_len()));
        Ok(sealer)
    }

    /// Remembers a listed object's sealed length (a pack's, for range reads).
    pub fn listed(&self, key: &str, len: u64) {
        if Sealing::is_pack_body(key) {
            self.remember(key, |seen| seen.sealed_len = Some(len));
        }
    }

    /// The pack's sealed length and header, as far as known.
    fn seen(&self, key: &str) -> PackSeen {
        let packs = self.packs.lock().unwrap_or_else(|e| e.into_inner());
        packs.get(key).copied().unwrap_or_default()
    }

    fn remember(&self, key: &str, learn: impl FnOnce(&mut PackSeen)) {
        let mut packs = self.packs.lock().unwrap_or_else(|e| e.into_inner());
        if packs.len() >= REMEMBERED_PACKS && !packs.contains_key(key) {
            let forget: Vec<String> = packs.keys().take(REMEMBERED_PACKS / 2).cloned().collect();
            for k in &forget {
                packs.remove(k);
            }
        }
        learn(packs.entry(key.to_string()).or_default());
    }

    /// What to fetch for bytes `plain` of the pack stored at `key` (its
    /// sealed length known): the sealed range, and whether the header
    /// must be fetched on its own first.
    pub fn plan_range(&self, key: &str, plain: Range<u64>) -> Result<Option<RangePlan>, Unopened> {
        let seen = self.seen(key);
        let Some(sealed_len) = seen.sealed_len else {
            return Ok(None);
        };
        let layout = SealedLayout::new(sealed_len).map_err(|e| unopened(key, e))?;
        let segments = layout
            .segments_covering(plain.clone())
            .map_err(|e| unopened(key, e))?;
        let sealed = layout
            .sealed_range(segments.clone())
            .ok_or_else(|| unopened(key, "a range past its end"))?;
        let fetch = match seen.header {
            Some(_) => sealed.clone(),
            None if sealed.start <= HEADER_WITH_RANGE => 0..sealed.end,
            None => sealed.clone(),
        };
        let first_plain = layout
            .segment_plain_range(segments.start)
            .ok_or_else(|| unopened(key, "a range past its end"))?
            .start;
        Ok(Some(RangePlan {
            header: seen.header,
            header_apart: seen.header.is_none() && fetch.start > 0,
            fetch,
            sealed,
            first_segment: segments.start,
            is_last: segments.end == layout.segment_count(),
            skip: plain.start - first_plain,
            len: plain.end - plain.start,
        }))
    }

    /// Forgets what was learnt of the pack at `key` (it was written anew:
    /// a rewrite seals it under a new header).
    pub fn forget(&self, key: &str) {
        let mut packs = self.packs.lock().unwrap_or_else(|e| e.into_inner());
        packs.remove(key);
    }

    /// Whether the stored key names a sealed object (what a rewrite
    /// re-seals): not the config, not a wrapped key.
    pub fn is_sealed_key(key: &str) -> bool {
        Sealing::seals(key) && is_stored_shape(key)
    }

    /// Remembers a pack's sealed length, learnt from a stat.
    pub fn stat_seen(&self, key: &str, len: u64) {
        self.remember(key, |seen| seen.sealed_len = Some(len));
    }

    /// Opens what a [`RangePlan`] fetched: `header_bytes` is the header
    /// fetched on its own, if the plan asked for it.
    pub fn open_range(
        &self,
        key: &str,
        plan: &RangePlan,
        header_bytes: Option<&[u8]>,
        mut fetched: Vec<u8>,
    ) -> Result<Vec<u8>, Unopened> {
        let header = match (plan.header, header_bytes) {
            (Some(h), _) => h,
            (None, Some(bytes)) => Header::parse(bytes).map_err(|e| unopened(key, e))?,
            (None, None) => Header::parse(&fetched).map_err(|e| unopened(key, e))?,
        };
        let at = (plan.sealed.start - plan.fetch.start) as usize;
        if fetched.len() < at || (fetched.len() - at) as u64 != plan.sealed.end - plan.sealed.start
        {
            return Err(unopened(key, "the storage gave fewer bytes than asked"));
        }
        // The segments opened in the buffer they came in (see
        // `open_segments_in_place`); a header fetched with them moved out first.
        fetched.drain(..at);
        let mut plain = dmv_crypt::open_segments_in_place(
            &self.keyring,
            key.as_bytes(),
            &header,
            plan.first_segment,
            fetched,
            plan.is_last,
        )
        .map_err(|e| unopened(key, e))?;
        // Authenticated: the header is the pack's.
        self.remember(key, |seen| seen.header = Some(header));
        let (from, to) = (plan.skip as usize, (plan.skip + plan.len) as usize);
        if to > plain.len() {
            return Err(unopened(key, "a range past its end"));
        }
        // In place: a range is megabytes, and fresh memory costs page faults.
        plain.truncate(to);
        plain.drain(..from);
        Ok(plain)
    }
}

/// How to read a range of a sealed pack.
pub(crate) struct RangePlan {
    /// The pack's header, if already known.
    header: Option<Header>,
    /// Whether the header must be fetched first ([`HEADER_LEN`] bytes at 0).
    pub header_apart: bool,
    /// The bytes to fetch.
    pub fetch: Range<u64>,
    /// The segments' bytes within the object.
    sealed: Range<u64>,
    first_segment: u64,
    is_last: bool,
    /// Plaintext bytes of the first segment before the range.
    skip: u64,
    len: u64,
}

/// The header's bytes, for a plan that fetches it apart.
pub(crate) const HEADER_RANGE: Range<u64> = 0..HEADER_LEN;

fn unopened(key: &str, e: impl std::fmt::Display) -> Unopened {
    Unopened {
        key: key.to_string(),
        detail: e.to_string(),
    }
}

/// Whether `key` is already a stored key (`<64 hex>` then `.p`, `.i` or `.s`).
pub(crate) fn is_stored_shape(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    let Some((hex, suffix)) = name.split_at_checked(64) else {
        return false;
    };
    [PACK_SUFFIX, INDEX_SUFFIX, OTHER_SUFFIX].contains(&suffix)
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealing() -> Sealing {
        Sealing::new(Keyring::from_epochs(&[(1, [9; 32])]).unwrap())
    }

    #[test]
    fn stored_keys_hide_ids_and_names_and_map_to_themselves() {
        let s = sealing();
        let sum = ObjectId([7; 32]);
        let pack = s.stored_key(&format!("packs/pack-{sum}.pack"));
        let index = s.stored_key(&format!("packs/pack-{sum}.idx"));
        let token = s.pack_token(&sum);
        assert_eq!(pack, format!("packs/{token}.p"));
        assert_eq!(index, format!("packs/{token}.i"));
        assert_eq!(Sealing::index_token(&index), Some(token));
        assert!(Sealing::is_pack_body(&pack) && !Sealing::is_pack_body(&index));
        let lock = s.stored_key("path-locks/photos/IMG_1.jpg");
        assert!(lock.starts_with("path-locks/") && lock.ends_with(".s"));
        assert!(!lock.contains("IMG") && !pack.contains(&sum.to_hex()));
        for stored in [&pack, &index, &lock] {
            assert_eq!(&s.stored_key(stored), stored);
        }
        assert_eq!(s.stored_key(CONFIG_KEY), CONFIG_KEY);
        assert_eq!(s.stored_key("keys/device-0102"), "keys/device-0102");
        // Another key names everything otherwise.
        let other = Sealing::new(Keyring::from_epochs(&[(1, [8; 32])]).unwrap());
        assert_ne!(other.stored_key("refs"), s.stored_key("refs"));
    }

    #[test]
    fn stored_keys_and_the_fingerprint_are_pinned() {
        // docs/formats.md, "An encrypted repository in a bucket": keyring of epoch 1 = 00 01 … 1f.
        let root: [u8; 32] = std::array::from_fn(|i| i as u8);
        let s = Sealing::new(Keyring::from_epochs(&[(1, root)]).unwrap());
        let sum = ObjectId([0x11; 32]);
        let got = [
            s.stored_key("refs"),
            s.stored_key(&format!("packs/pack-{sum}.pack")),
            s.stored_key(&format!("packs/pack-{sum}.idx")),
            s.stored_key("locations/0123456789abcdef0123456789abcdef"),
            crate::config::fingerprint(s.keyring()),
        ];
        let want = [
            "c377e98c2f44bb81c6f7effd92ccad873866277f8ec07b3915cf04dc55164cbb.s",
            "packs/59df4c8f131eff5f576a8cb015deaadc640c18b189fe7a9013b8a5253ef0d2da.p",
            "packs/59df4c8f131eff5f576a8cb015deaadc640c18b189fe7a9013b8a5253ef0d2da.i",
            "locations/140ead2e02e61eaccbcbfad7d4bbb3b0c40f68c33e7874c6c8ce793702a6b0fa.s",
            "b9091ee4bb646b47c6144eee173aca7fd99e604badd3f38f2f401161c20cb359",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_body_opens_only_under_its_own_key() {
        let s = sealing();
        let sealed = s.seal("refs.s", b"table").unwrap();
        assert_eq!(s.open("refs.s", &sealed).unwrap(), b"table");
        assert!(s.open("other.s", &sealed).is_err());
        let mut flipped = sealed.clone();
        flipped[40] ^= 1;
        assert!(s.open("refs.s", &flipped).is_err());
    }

    proptest::proptest! {
        #[test]
        fn every_key_is_stored_under_a_name_that_maps_to_itself(key in "[a-z0-9/._-]{1,60}") {
            let s = sealing();
            let stored = s.stored_key(&key);
            proptest::prop_assert_eq!(s.stored_key(&stored), stored.clone());
            if Sealing::seals(&key) {
                proptest::prop_assert!(is_stored_shape(&stored), "{} -> {}", key, stored);
            }
        }

        #[test]
        fn whatever_the_storage_returns_for_a_range_is_refused_or_right(
            garbage in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300_000),
            start in 0u64..300_000,
            len in 1u64..70_000,
            sealed_len in proptest::option::of(0u64..400_000),
        ) {
            let s = sealing();
            let key = "packs/bb.p";
            s.listed(key, sealed_len.unwrap_or(garbage.len() as u64));
            if let Ok(Some(plan)) = s.plan_range(key, start..start + len) {
                let header = plan.header_apart.then(|| &garbage[..garbage.len().min(25)]);
                let fetched = garbage.get(..(plan.fetch.end - plan.fetch.start) as usize).unwrap_or(&garbage);
                proptest::prop_assert!(s.open_range(key, &plan, header, fetched.to_vec()).is_err());
            }
        }
    }

    #[test]
    fn ranges_of_a_pack_open_from_their_segments_alone() {
        let s = sealing();
        let key = "packs/aa.p";
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let sealed = s.seal(key, &data).unwrap();
        s.listed(key, sealed.len() as u64);
        for range in [0..10, 70_000..70_100, 65_530..131_080, 299_000..300_000] {
            let plan = s.plan_range(key, range.clone()).unwrap().unwrap();
            let header = plan.header_apart.then(|| &sealed[..HEADER_LEN as usize]);
            let fetched = &sealed[plan.fetch.start as usize..plan.fetch.end as usize];
            let got = s.open_range(key, &plan, header, fetched.to_vec()).unwrap();
            assert_eq!(got, &data[range.start as usize..range.end as usize]);
        }
        // Far from the start, the header once known: only the segments are fetched.
        let plan = s.plan_range(key, 200_000..200_010).unwrap().unwrap();
        assert!(!plan.header_apart);
        assert!(plan.fetch.end - plan.fetch.start <= 2 * dmv_crypt::SEALED_SEGMENT_LEN);
    }
}
