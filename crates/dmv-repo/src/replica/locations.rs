//! Where file data lives: every replica's id, and the location log, which
//! records per (file version, replica) whether that replica holds the
//! version's data, and when that was learnt. Logs from any replicas merge
//! without conflict: per key and replica the newest record wins (at equal
//! times "absent" wins, so a merge never invents a copy).
//!
//! It also carries each replica's card (the newest a replica gave of itself
//! wins): its name, so a replica heard of only through others is shown by
//! name, the URLs it publishes, so any replica can reach one it has only
//! heard of, and whether it is metered, so others do not pull from it.
//!
//! The log's encoding (version 3, what travels): magic, version, record
//! count, the records sorted by (key, replica), each 32 + 16 + 8 + 1 bytes,
//! then the card count and the cards sorted by replica (see
//! [`encode_cards`]), and a BLAKE3 checksum. Versions 1 (no cards) and 2
//! (cards of a name only) are still read.
//!
//! `.dmv/locations` is version 4, the same packed: the header as it is,
//! then one zstd frame of the records and the cards, then the checksum of
//! the header and the frame as written. A record's id does not
//! compress, but its replica, time and the id repeated for each holder do:
//! 57 bytes a record become about 17 (a meta clone's log of 100,000 files
//! held by two replicas: 11.4 MB, 3.3 MB packed). Version 5, what is
//! written now, begins the frame with tree claims, which stand for a
//! record per file of a tree (location_claims.rs): the same log, 286 bytes.
//! Versions 3 and 4 are still read.
//! `.dmv/replica-id`: this replica's id, made once (the first writer wins).

use crate::repository::handles::Copies;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;

use dmv_store::ObjectId;

use crate::error::{IoContext, RepoError, RepoResult};

pub(crate) const MAGIC: &[u8; 8] = b"DMVLOCS\0";
pub(crate) const VERSION: u32 = 3;
/// Version 4: version 3 with the records and cards in a zstd frame.
pub(crate) const VERSION_PACKED: u32 = 4;
/// Version 5 (the file on disk): version 4 with tree claims at the start of
/// the frame (see location_claims.rs).
pub(crate) const VERSION_CLAIMS: u32 = 5;
/// Version 2: cards of a name only.
pub(crate) const VERSION_NAMES_ONLY: u32 = 2;
/// Version 1: the same without the cards.
pub(crate) const VERSION_WITHOUT_NAMES: u32 = 1;
/// Longer names are cut (at a character boundary) when recorded.
pub const MAX_NAME_LEN: usize = 255;
/// A card publishes at most this many URLs, each of at most [`MAX_PUBLISHED_URL_LEN`] bytes.
pub const MAX_PUBLISHED_URLS: usize = 8;
/// The longest URL a card publishes.
pub const MAX_PUBLISHED_URL_LEN: usize = 1024;
pub(crate) const RECORD_LEN: usize = 32 + 16 + 8 + 1;
pub(crate) const HEADER_LEN: usize = 8 + 4 + 8;

/// A replica's identity, made at random when it is first needed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ReplicaId(pub [u8; 16]);

impl ReplicaId {
    /// A fresh id: unique in practice (time, process, place and a hash of them).
    pub fn new_random(salt: &[u8]) -> ReplicaId {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut h = blake3::Hasher::new();
        h.update(&now.to_le_bytes());
        h.update(&std::process::id().to_le_bytes());
        h.update(&(&now as *const u128 as usize).to_le_bytes());
        h.update(salt);
        let mut id = [0u8; 16];
        id.copy_from_slice(&h.finalize().as_bytes()[..16]);
        ReplicaId(id)
    }

    /// An id derived from a name (for replicas that cannot store one of their own yet).
    pub fn derived(name: &str) -> ReplicaId {
        let mut id = [0u8; 16];
        id.copy_from_slice(&blake3::hash(name.as_bytes()).as_bytes()[..16]);
        ReplicaId(id)
    }

    /// Reads an id as [`fmt::Display`] writes it (hex, dashes optional);
    /// None if it is not 16 bytes of hex.
    pub fn parse(text: &str) -> Option<ReplicaId> {
        let hex: String = text.trim().chars().filter(|c| *c != '-').collect();
        let bytes = hex::decode(hex).ok()?;
        Some(ReplicaId(bytes.try_into().ok()?))
    }
}

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = hex::encode(self.0);
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }
}

/// What is known of one replica's copy of one file version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// When it was learnt (nanoseconds since the Unix epoch).
    pub time_ns: u64,
    /// Whether the replica holds the data (false: it was dropped or lost).
    pub present: bool,
}

impl Stamp {
    pub(crate) fn newer_than(&self, other: &Stamp) -> bool {
        (self.time_ns, !self.present) > (other.time_ns, !other.present)
    }
}

/// One record: what is known of `replica`'s copy of `key`'s data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocationRecord {
    /// The file version, by its content id.
    pub key: ObjectId,
    /// The replica the record is about.
    pub replica: ReplicaId,
    /// Whether it holds the data, and since when.
    pub stamp: Stamp,
}

impl LocationRecord {
    /// Records are sorted, and unique, by this.
    pub fn order(&self) -> (ObjectId, ReplicaId) {
        (self.key, self.replica)
    }

    /// Sorts records by [`LocationRecord::order`], and the records of one
    /// (key, replica) older first, as [`Stamp::newer_than`] judges them.
    pub(crate) fn order_then_age(&self) -> ((ObjectId, ReplicaId), u64, bool) {
        (self.order(), self.stamp.time_ns, !self.stamp.present)
    }

    pub(crate) fn encode(&self) -> [u8; RECORD_LEN] {
        let mut record = [0u8; RECORD_LEN];
        record[..32].copy_from_slice(&self.key.0);
        record[32..48].copy_from_slice(&self.replica.0);
        record[48..56].copy_from_slice(&self.stamp.time_ns.to_le_bytes());
        record[56] = self.stamp.present as u8;
        record
    }

    pub(crate) fn decode(r: &[u8; RECORD_LEN]) -> Result<LocationRecord, BadLocationLog> {
        let bad = |d: &str| BadLocationLog(d.to_string());
        let key = ObjectId(r[..32].try_into().map_err(|_| bad("short record"))?);
        let replica = ReplicaId(r[32..48].try_into().map_err(|_| bad("short record"))?);
        let time_ns = u64::from_le_bytes(r[48..56].try_into().map_err(|_| bad("short record"))?);
        let present = match r[56] {
            0 => false,
            1 => true,
            _ => return Err(bad("a record is neither present nor absent")),
        };
        Ok(LocationRecord {
            key,
            replica,
            stamp: Stamp { time_ns, present },
        })
    }
}

/// What a replica says of itself in the logs it sends. Only the replica
/// writes its own card (from its config), so the newest one is the truth.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReplicaCard {
    /// What others show it by (`replica_name`, default user@host:path).
    pub name: String,
    /// Where it can be reached (`dmv replica --publish`): URLs without
    /// credentials, which every reader supplies for itself.
    pub urls: Vec<String>,
    /// It pays for what it sends (a phone on mobile data): others do not
    /// pull file data from it unless told to.
    pub metered: bool,
}

impl ReplicaCard {
    /// A card of a name only (what a version 2 log carries).
    pub fn named(name: &str) -> ReplicaCard {
        ReplicaCard {
            name: name.to_string(),
            ..Default::default()
        }
    }

    /// The card within the format's limits: the name cut at a character
    /// boundary, at most [`MAX_PUBLISHED_URLS`] URLs of at most [`MAX_PUBLISHED_URL_LEN`] bytes.
    fn bounded(mut self) -> ReplicaCard {
        let mut end = self.name.len().min(MAX_NAME_LEN);
        while !self.name.is_char_boundary(end) {
            end -= 1;
        }
        self.name.truncate(end);
        self.urls.retain(|u| u.len() <= MAX_PUBLISHED_URL_LEN);
        self.urls.truncate(MAX_PUBLISHED_URLS);
        self
    }
}

/// Each replica's card, with when it gave it (nanoseconds since the epoch).
pub type ReplicaCards = BTreeMap<ReplicaId, (u64, ReplicaCard)>;

/// `.dmv/locations` in memory: per file version and replica, the newest
/// record, and the replicas' cards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocationLog {
    /// The newest stamp per (content id, replica).
    pub records: BTreeMap<(ObjectId, ReplicaId), Stamp>,
    /// Each replica's card, with when it gave it (nanoseconds since the epoch).
    pub cards: ReplicaCards,
}

/// Why bytes are not a location log.
#[derive(Debug, thiserror::Error)]
#[error("not a valid location log: {0}")]
pub struct BadLocationLog(pub String);

/// The time now, in nanoseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl LocationLog {
    /// Adds a record; an older one than what is known changes nothing.
    pub fn record(&mut self, key: ObjectId, replica: ReplicaId, stamp: Stamp) {
        match self.records.get(&(key, replica)) {
            Some(known) if !stamp.newer_than(known) => {}
            _ => {
                self.records.insert((key, replica), stamp);
            }
        }
    }

    /// Records a replica's card as of `time_ns`; an older one changes nothing
    /// (at equal times the greater card wins, so merges agree).
    pub fn card(&mut self, replica: ReplicaId, time_ns: u64, card: ReplicaCard) {
        let candidate = (time_ns, card.bounded());
        match self.cards.get(&replica) {
            Some(known) if *known >= candidate => {}
            _ => {
                self.cards.insert(replica, candidate);
            }
        }
    }

    /// Takes in every record and card of `other` (newest wins); returns how many changed this log.
    pub fn merge(&mut self, other: &LocationLog) -> usize {
        if self.records.is_empty() && self.cards.is_empty() {
            // A new replica's first exchange: the same result without a lookup per record.
            *self = other.clone();
            return self.records.len() + self.cards.len();
        }
        let before = self.clone();
        for (&(key, replica), &stamp) in &other.records {
            self.record(key, replica, stamp);
        }
        for (replica, (time_ns, card)) in &other.cards {
            self.card(*replica, *time_ns, card.clone());
        }
        self.records
            .iter()
            .filter(|(k, v)| before.records.get(k) != Some(v))
            .count()
            + self
                .cards
                .iter()
                .filter(|(k, v)| before.cards.get(k) != Some(v))
                .count()
    }

    /// Every record, in order.
    pub fn iter(&self) -> impl Iterator<Item = LocationRecord> + '_ {
        self.records
            .iter()
            .map(|(&(key, replica), &stamp)| LocationRecord {
                key,
                replica,
                stamp,
            })
    }

    /// The replicas known to hold `key`'s data.
    pub fn holders(&self, key: &ObjectId) -> Vec<(ReplicaId, Stamp)> {
        let from = (*key, ReplicaId([0; 16]));
        self.records
            .range(from..)
            .take_while(|((k, _), _)| k == key)
            .filter(|(_, s)| s.present)
            .map(|((_, r), s)| (*r, *s))
            .collect()
    }

    /// The log in its file format (see the module's doc).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.records.len() * RECORD_LEN + 32);
        // Writing to a vector cannot fail.
        let _ = self.encode_to(&mut out);
        out
    }

    /// [`LocationLog::encode`], streamed: at a million files the encoding
    /// is ~60 MB a replica, which need not sit in memory beside the log.
    pub fn encode_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        write_framed(
            out,
            self.records.len() as u64,
            &mut |out| self.iter().try_for_each(|r| out.write_all(&r.encode())),
            &self.cards,
        )
    }

    /// Reads a log in its file format, checking checksum, records and order.
    pub fn decode(bytes: &[u8]) -> Result<LocationLog, BadLocationLog> {
        let (records, cards) = LocationLog::read_encoded(bytes)?;
        Ok(LocationLog {
            records: records.map(|r| (r.order(), r.stamp)).collect(),
            cards,
        })
    }

    /// The records (in order) and cards of an encoded log, all checked
    /// (checksum, each record, their order) before any is handed out, and
    /// read from the bytes as they are taken rather than into a map (which
    /// takes about twice the bytes of the encoding).
    pub fn read_encoded(
        bytes: &[u8],
    ) -> Result<(impl Iterator<Item = LocationRecord> + '_, ReplicaCards), BadLocationLog> {
        let bad = |d: &str| BadLocationLog(d.to_string());
        if bytes.len() < HEADER_LEN + 32 || &bytes[..8] != MAGIC {
            return Err(bad("no location log header"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 32);
        if blake3::hash(body).as_bytes()[..] != *sum {
            return Err(bad("checksum mismatch"));
        }
        let version = u32::from_le_bytes(body[8..12].try_into().map_err(|_| bad("short header"))?);
        let with_names = match version {
            VERSION | VERSION_NAMES_ONLY => true,
            VERSION_WITHOUT_NAMES => false,
            _ => return Err(bad("unknown version")),
        };
        let count = u64::from_le_bytes(body[12..20].try_into().map_err(|_| bad("short header"))?);
        let rest = &body[HEADER_LEN..];
        let records_len = count
            .checked_mul(RECORD_LEN as u64)
            .filter(|n| *n <= rest.len() as u64)
            .ok_or_else(|| bad("record count does not match the length"))?
            as usize;
        let (records, names) = rest.split_at(records_len);
        if !with_names && !names.is_empty() {
            return Err(bad("record count does not match the length"));
        }
        let mut previous: Option<(ObjectId, ReplicaId)> = None;
        for r in records.chunks_exact(RECORD_LEN) {
            let record = LocationRecord::decode(r.try_into().map_err(|_| bad("short record"))?)?;
            if previous.is_some_and(|p| p >= record.order()) {
                return Err(bad("records out of order"));
            }
            previous = Some(record.order());
        }
        let mut log = LocationLog::default();
        if with_names {
            decode_cards(names, version, &mut log)?;
        }
        // Every record decoded above: none is left out here.
        let records = records
            .chunks_exact(RECORD_LEN)
            .filter_map(|r| LocationRecord::decode(r.try_into().ok()?).ok());
        Ok((records, log.cards))
    }
}

/// A whole log around `count` records that `records` writes in order:
/// header, records, cards, checksum.
pub(crate) fn write_framed(
    out: &mut dyn Write,
    count: u64,
    records: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    cards: &ReplicaCards,
) -> std::io::Result<()> {
    // Buffered below the hash, which then takes large pieces (records are 57 bytes).
    let mut out = dmv_store::HashingWriter::new(std::io::BufWriter::with_capacity(1 << 16, out));
    out.write_all(MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    out.write_all(&count.to_le_bytes())?;
    records(&mut out)?;
    encode_cards(cards, &mut out)?;
    let sum = out.hasher.finalize();
    out.inner.write_all(sum.as_bytes())?;
    out.inner.flush()
}

/// The cards section of a version 3 log: the count (u32), then per replica,
/// in replica order: `id [16] | time ns u64 | name length u8 | name |
/// flags u8 (bit 0: metered) | URL count u8 | URL count × (length u16 | URL)`.
/// (Version 2 has each card's id, time, name length and name only.)
pub(crate) fn encode_cards(cards: &ReplicaCards, out: &mut dyn Write) -> std::io::Result<()> {
    out.write_all(&(cards.len() as u32).to_le_bytes())?;
    for (replica, (time_ns, card)) in cards {
        // `card` keeps cards within the limits; one made otherwise is cut here.
        let card = card.clone().bounded();
        out.write_all(&replica.0)?;
        out.write_all(&time_ns.to_le_bytes())?;
        out.write_all(&[card.name.len() as u8])?;
        out.write_all(card.name.as_bytes())?;
        out.write_all(&[card.metered as u8, card.urls.len() as u8])?;
        for url in &card.urls {
            out.write_all(&(url.len() as u16).to_le_bytes())?;
            out.write_all(url.as_bytes())?;
        }
    }
    Ok(())
}

/// Reads what [`encode_cards`] wrote (or, for `version` 2, the names).
pub(crate) fn decode_cards(
    mut bytes: &[u8],
    version: u32,
    log: &mut LocationLog,
) -> Result<(), BadLocationLog> {
    let bad = |d: &str| BadLocationLog(d.to_string());
    let mut take = |n: usize| -> Result<&[u8], BadLocationLog> {
        if bytes.len() < n {
            return Err(bad("a card runs past the end"));
        }
        let (head, tail) = bytes.split_at(n);
        bytes = tail;
        Ok(head)
    };
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| bad("a card is not UTF-8"))
    };
    let count = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad("short card count"))?);
    let mut previous: Option<ReplicaId> = None;
    for _ in 0..count {
        let replica = ReplicaId(take(16)?.try_into().map_err(|_| bad("short card"))?);
        let time_ns = u64::from_le_bytes(take(8)?.try_into().map_err(|_| bad("short card"))?);
        let len = take(1)?[0] as usize;
        let mut card = ReplicaCard::named(&text(take(len)?)?);
        if version >= VERSION {
            let flags = take(1)?[0];
            if flags > 1 {
                return Err(bad("unknown card flags"));
            }
            card.metered = flags == 1;
            let urls = take(1)?[0] as usize;
            if urls > MAX_PUBLISHED_URLS {
                return Err(bad("a card publishes too many URLs"));
            }
            for _ in 0..urls {
                let len = u16::from_le_bytes(take(2)?.try_into().map_err(|_| bad("short card"))?)
                    as usize;
                if len > MAX_PUBLISHED_URL_LEN {
                    return Err(bad("a published URL is too long"));
                }
                card.urls.push(text(take(len)?)?);
            }
        }
        if previous.is_some_and(|p| p >= replica) {
            return Err(bad("cards out of order"));
        }
        previous = Some(replica);
        log.cards.insert(replica, (time_ns, card));
    }
    if !bytes.is_empty() {
        return Err(bad("bytes after the cards"));
    }
    Ok(())
}

impl Copies<'_> {
    pub(crate) fn locations_path(&self) -> std::path::PathBuf {
        self.dmv.join("locations")
    }

    /// This replica's id, made and stored the first time it is asked for.
    pub fn replica_id(&self) -> RepoResult<ReplicaId> {
        let path = self.dmv.join("replica-id");
        match std::fs::read(&path) {
            Ok(bytes) => {
                let id = std::str::from_utf8(&bytes)
                    .ok()
                    .filter(|text| crate::seal::checked(text) != Some(false))
                    .and_then(|text| ReplicaId::parse(crate::seal::body(text)));
                return id.ok_or_else(|| RepoError::Corrupt {
                    path: path.clone(),
                    detail: "not a replica id".into(),
                });
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(RepoError::io(&path, e))
            }
            Err(_) => {}
        }
        let id = ReplicaId::new_random(self.root.as_os_str().as_encoded_bytes());
        let tmp = self
            .dmv
            .join(format!("replica-id.tmp-{}", std::process::id()));
        std::fs::write(&tmp, crate::seal::seal(&format!("{id}\n"))).at(&tmp)?;
        // A hard link never replaces: of two processes making an id at once, the first wins and both use it.
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(id),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self.replica_id(),
            // File systems without hard links (FAT, exFAT: a camera's card, a USB stick):
            // O_CREAT|O_EXCL, at the price of a moment in which the file is there but empty.
            Err(e) if dmv_os::no_hard_links(&e) => {
                let made = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .and_then(|mut f| {
                        std::io::Write::write_all(
                            &mut f,
                            crate::seal::seal(&format!("{id}\n")).as_bytes(),
                        )?;
                        f.sync_all()
                    });
                match made {
                    Ok(()) => Ok(id),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self.replica_id(),
                    Err(e) => Err(RepoError::io(&path, e)),
                }
            }
            Err(e) => Err(RepoError::io(&path, e)),
        }
    }

    /// This replica's name: the config's `replica_name`, else user@host:path
    /// (as git-annex describes a repository).
    pub fn replica_name(&self) -> String {
        if let Some(name) = self
            .config
            .replica_name
            .as_deref()
            .filter(|n| !n.trim().is_empty())
        {
            return name.to_string();
        }
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "dmv".into());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        format!("{user}@{host}:{}", self.root.display())
    }

    /// What this replica says of itself: its name, the URLs it publishes
    /// and whether it is metered (`dmv replica`).
    pub fn my_card(&self) -> ReplicaCard {
        ReplicaCard {
            name: self.replica_name(),
            urls: self.config.publish.clone(),
            metered: self.config.metered,
        }
        .bounded()
    }

    /// `log` with this replica's current card in it (if it has an id yet).
    pub(crate) fn with_my_card(&self, log: &mut LocationLog) {
        let Ok(me) = self.replica_id() else { return };
        let card = self.my_card();
        if log.cards.get(&me).map(|(_, c)| c) != Some(&card) {
            log.card(me, now_ns(), card);
        }
    }

    /// Replicas this one has heard of, by id, with the name each gave (`.dmv/replicas`).
    pub fn known_replicas(&self) -> RepoResult<BTreeMap<ReplicaId, String>> {
        let path = self.dmv.join("replicas");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(RepoError::io(path, e)),
        };
        if crate::seal::checked(&text) == Some(false) {
            return Err(RepoError::Corrupt {
                path,
                detail: "does not match its check line".into(),
            });
        }
        Ok(crate::seal::body(&text)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter_map(|(id, name)| Some((ReplicaId::parse(id)?, name.to_string())))
            .collect())
    }

    /// Remembers a replica's id and name (one line each in `.dmv/replicas`).
    pub fn remember_replica(&self, id: ReplicaId, name: &str) -> RepoResult<()> {
        let name = name.replace('\n', " ");
        let mut known = self.known_replicas()?;
        if known.get(&id) == Some(&name) {
            return Ok(());
        }
        known.insert(id, name);
        let text: String = known
            .iter()
            .map(|(id, name)| format!("{id} {name}\n"))
            .collect();
        crate::atomic::write_atomic(
            &self.dmv.join("replicas"),
            crate::seal::seal(&text).as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id(n: u8) -> ObjectId {
        ObjectId([n; 32])
    }

    #[test]
    fn the_newest_record_wins_and_absent_wins_a_tie() {
        let (a, b) = (ReplicaId([1; 16]), ReplicaId([2; 16]));
        let mut one = LocationLog::default();
        one.record(
            id(7),
            a,
            Stamp {
                time_ns: 10,
                present: true,
            },
        );
        one.record(
            id(7),
            b,
            Stamp {
                time_ns: 10,
                present: true,
            },
        );
        let mut two = LocationLog::default();
        two.record(
            id(7),
            a,
            Stamp {
                time_ns: 5,
                present: false,
            },
        );
        two.record(
            id(7),
            b,
            Stamp {
                time_ns: 10,
                present: false,
            },
        );
        let mut merged = one.clone();
        assert_eq!(merged.merge(&two), 1);
        assert_eq!(
            merged.holders(&id(7)),
            vec![(
                a,
                Stamp {
                    time_ns: 10,
                    present: true
                }
            )]
        );
        let mut other_way = two.clone();
        other_way.merge(&one);
        assert_eq!(merged, other_way);
    }

    #[test]
    fn the_encoding_is_pinned() {
        let mut log = LocationLog::default();
        log.record(
            id(1),
            ReplicaId([2; 16]),
            Stamp {
                time_ns: 3,
                present: true,
            },
        );
        log.card(
            ReplicaId([2; 16]),
            4,
            ReplicaCard {
                name: "nas".into(),
                urls: vec!["ssh://n/r".into()],
                metered: true,
            },
        );
        let bytes = log.encode();
        let mut expected = b"DMVLOCS\0".to_vec();
        expected.extend([3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        expected.extend([1u8; 32]);
        expected.extend([2u8; 16]);
        expected.extend([3, 0, 0, 0, 0, 0, 0, 0, 1]);
        expected.extend([1, 0, 0, 0]);
        expected.extend([2u8; 16]);
        expected.extend([4, 0, 0, 0, 0, 0, 0, 0, 3]);
        expected.extend(b"nas");
        expected.extend([1, 1, 9, 0]);
        expected.extend(b"ssh://n/r");
        expected.extend(blake3::hash(&expected).as_bytes());
        assert_eq!(bytes, expected);
        assert_eq!(LocationLog::decode(&bytes).unwrap(), log);
        // Version 2, cards of a name only, is still read.
        let mut v2 = b"DMVLOCS\0".to_vec();
        v2.extend([2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        v2.extend([1, 0, 0, 0]);
        v2.extend([2u8; 16]);
        v2.extend([4, 0, 0, 0, 0, 0, 0, 0, 3]);
        v2.extend(b"nas");
        v2.extend(blake3::hash(&v2).as_bytes());
        assert_eq!(
            LocationLog::decode(&v2).unwrap().cards[&ReplicaId([2; 16])],
            (4, ReplicaCard::named("nas"))
        );
        // Version 1, without names, is still read.
        let mut v1 = b"DMVLOCS\0".to_vec();
        v1.extend([1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        v1.extend([1u8; 32]);
        v1.extend([2u8; 16]);
        v1.extend([3, 0, 0, 0, 0, 0, 0, 0, 1]);
        v1.extend(blake3::hash(&v1).as_bytes());
        let old = LocationLog::decode(&v1).unwrap();
        assert_eq!(old.records, log.records);
        assert!(old.cards.is_empty());
        assert_eq!(
            ReplicaId([0xab; 16]).to_string(),
            "abababab-abab-abab-abab-abababababab"
        );
        assert_eq!(
            ReplicaId::parse("abababab-abab-abab-abab-abababababab"),
            Some(ReplicaId([0xab; 16]))
        );
    }

    fn arb_log() -> impl Strategy<Value = LocationLog> {
        let records = proptest::collection::vec((0u8..4, 0u8..3, 0u64..4, any::<bool>()), 0..20);
        let cards = proptest::collection::vec(
            (
                0u8..3,
                0u64..3,
                "[a-zé]{0,3}",
                proptest::collection::vec("[a-z:/]{0,6}", 0..3),
                any::<bool>(),
            ),
            0..4,
        );
        (records, cards).prop_map(|(rs, cs)| {
            let mut log = LocationLog::default();
            for (k, r, t, p) in rs {
                log.record(
                    id(k),
                    ReplicaId([r; 16]),
                    Stamp {
                        time_ns: t,
                        present: p,
                    },
                );
            }
            for (r, t, name, urls, metered) in cs {
                log.card(
                    ReplicaId([r; 16]),
                    t,
                    ReplicaCard {
                        name,
                        urls,
                        metered,
                    },
                );
            }
            log
        })
    }

    #[test]
    fn a_card_is_kept_within_limits_and_the_newest_card_wins() {
        let mut log = LocationLog::default();
        let long = "é".repeat(200);
        let urls: Vec<String> = (0..20)
            .map(|i| format!("https://h{i}/r"))
            .chain(["x".repeat(MAX_PUBLISHED_URL_LEN + 1)])
            .collect();
        log.card(
            ReplicaId([1; 16]),
            5,
            ReplicaCard {
                name: long.clone(),
                urls,
                metered: false,
            },
        );
        let (_, kept) = &log.cards[&ReplicaId([1; 16])];
        assert!(
            kept.name.len() <= MAX_NAME_LEN
                && long.starts_with(kept.name.as_str())
                && kept.name.len() == 254
        );
        assert_eq!(kept.urls.len(), MAX_PUBLISHED_URLS);
        assert_eq!(LocationLog::decode(&log.encode()).unwrap(), log);
        log.card(ReplicaId([1; 16]), 4, ReplicaCard::named("older"));
        log.card(ReplicaId([1; 16]), 6, ReplicaCard::named("laptop"));
        assert_eq!(
            log.cards[&ReplicaId([1; 16])],
            (6, ReplicaCard::named("laptop"))
        );
        assert_eq!(LocationLog::decode(&log.encode()).unwrap(), log);
    }

    proptest! {
        #[test]
        fn merging_is_commutative_associative_and_idempotent(a in arb_log(), b in arb_log(), c in arb_log()) {
            let mut ab = a.clone(); ab.merge(&b);
            let mut ba = b.clone(); ba.merge(&a);
            prop_assert_eq!(&ab, &ba);
            let mut ab_c = ab.clone(); ab_c.merge(&c);
            let mut bc = b.clone(); bc.merge(&c);
            let mut a_bc = a.clone(); a_bc.merge(&bc);
            prop_assert_eq!(&ab_c, &a_bc);
            let mut again = ab.clone();
            prop_assert_eq!(again.merge(&ab), 0);
            prop_assert_eq!(LocationLog::decode(&ab.encode()).unwrap(), ab);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), with_header in any::<bool>()) {
            let mut data = if with_header { let mut v = MAGIC.to_vec(); v.extend_from_slice(&VERSION.to_le_bytes()); v.extend_from_slice(&((bytes.len() / RECORD_LEN / 2) as u64).to_le_bytes()); v } else { Vec::new() };
            data.extend(bytes);
            let sum = blake3::hash(&data);
            data.extend_from_slice(sum.as_bytes());
            let _ = LocationLog::decode(&data);
        }
    }
}
