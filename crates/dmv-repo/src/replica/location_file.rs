//! The location log on disk, read and merged as a stream. At a million
//! files a log holds millions of records: merging new ones in (a clone, a
//! fetch, a push received) reads the file record by record and writes the
//! merged records out, and a page of it is read the same way, so memory is
//! a buffer's, not the log's (the format is in locations.rs). A few records
//! (a `get`, a drop) are appended to the journal instead, which every
//! reading takes together with the log (location_journal.rs).

use crate::repository::handles::Copies;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use dmv_store::ObjectId;

use crate::error::{IoContext, RepoError, RepoResult};
use crate::replica::location_claims::{
    check_claims, claims_from_records, encode_claims, ClaimFinder, Expansion, TreeClaim, CLAIM_LEN,
    MAX_CLAIMS,
};
use crate::replica::location_journal::{
    journal_frame, journal_header, parse_journal, Journal, JOURNAL_LIMIT,
};
use crate::replica::locations::{
    decode_cards, encode_cards, now_ns, write_framed, LocationLog, LocationRecord, ReplicaCards,
    ReplicaId, Stamp, HEADER_LEN, MAGIC, RECORD_LEN, VERSION, VERSION_CLAIMS, VERSION_NAMES_ONLY,
    VERSION_PACKED, VERSION_WITHOUT_NAMES,
};
use crate::repository::repo::Repository;

/// `.dmv/locations` read record by record and hashed as it is read: what it
/// yields counts only once [`LogReader::finish`] has checked the checksum.
/// Once [`LogReader::expand`]ed, the records its tree claims stand for come
/// with those written out, in order.
struct LogReader {
    path: PathBuf,
    input: LogInput,
    hasher: blake3::Hasher,
    left: u64,
    version: u32,
    previous: Option<(ObjectId, ReplicaId)>,
    /// The tree claims (version 5), as read.
    claims: Vec<TreeClaim>,
    /// The records the claims stand for, still to come.
    expansion: Option<Expansion>,
    /// The next record written out, read ahead (beside an expansion).
    written: Option<LocationRecord>,
}

/// Where the records come from: the file itself (versions 1 to 3, with
/// the length of the cards that follow them), or the zstd frame of a
/// packed log (version 4), whose cards end where the frame does.
enum LogInput {
    Plain {
        input: BufReader<File>,
        cards_len: u64,
    },
    Packed(Box<zstd::stream::read::Decoder<'static, HashedInput>>),
}

/// A packed log's file as its frame's decoder takes it, hashed as each
/// byte is consumed: the checksum covers the bytes on disk.
struct HashedInput {
    input: BufReader<File>,
    hasher: blake3::Hasher,
}

impl Read for HashedInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.input.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl std::io::BufRead for HashedInput {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.input.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        let taken = amt.min(self.input.buffer().len());
        self.hasher.update(&self.input.buffer()[..taken]);
        self.input.consume(amt);
    }
}

/// The most a packed log's cards may take (a card is at most about 8 KiB):
/// a damaged frame does not fill the memory.
const MAX_CARDS_LEN: u64 = 64 << 20;

impl LogReader {
    /// None when there is no log yet.
    fn open(path: &Path) -> RepoResult<Option<LogReader>> {
        match File::open(path) {
            Ok(file) => LogReader::of(path, file).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(RepoError::io(path, e)),
        }
    }

    /// Reads `file` (the log at `path`) from where it stands.
    fn of(path: &Path, file: File) -> RepoResult<LogReader> {
        let len = file.metadata().at(path)?.len();
        let bad = |detail: &str| RepoError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("not a valid location log: {detail}"),
        };
        let mut input = BufReader::with_capacity(1 << 20, file);
        if len < (HEADER_LEN + 32) as u64 {
            return Err(bad("no location log header"));
        }
        let mut header = [0u8; HEADER_LEN];
        input.read_exact(&mut header).at(path)?;
        let mut hasher = blake3::Hasher::new();
        hasher.update(&header);
        let (magic, rest) = header.split_at(8);
        let (version, count) = rest.split_at(4);
        let version = u32::from_le_bytes(version.try_into().unwrap_or_default());
        let count = u64::from_le_bytes(count.try_into().unwrap_or_default());
        let body = len - (HEADER_LEN + 32) as u64;
        // The length of the cards after the records of a plain log.
        let cards_len = |with_cards: bool| -> RepoResult<u64> {
            let records = count
                .checked_mul(RECORD_LEN as u64)
                .filter(|n| *n <= body)
                .ok_or_else(|| bad("record count does not match the length"))?;
            if !with_cards && body != records {
                return Err(bad("record count does not match the length"));
            }
            Ok(body - records)
        };
        let input = match version {
            _ if magic != MAGIC => return Err(bad("no location log header")),
            VERSION_PACKED | VERSION_CLAIMS => LogInput::Packed(Box::new(
                zstd::stream::read::Decoder::with_buffer(HashedInput {
                    input,
                    hasher: hasher.clone(),
                })
                .at(path)?
                .single_frame(),
            )),
            VERSION | VERSION_NAMES_ONLY => LogInput::Plain {
                cards_len: cards_len(true)?,
                input,
            },
            VERSION_WITHOUT_NAMES => LogInput::Plain {
                cards_len: cards_len(false)?,
                input,
            },
            _ => return Err(bad("unknown version")),
        };
        let mut reader = LogReader {
            path: path.to_path_buf(),
            input,
            hasher,
            left: count,
            version,
            previous: None,
            claims: Vec::new(),
            expansion: None,
            written: None,
        };
        if version == VERSION_CLAIMS {
            let mut count = [0u8; 4];
            reader.read(&mut count)?;
            let count = u32::from_le_bytes(count) as usize;
            if count > MAX_CLAIMS {
                return Err(reader.bad("too many tree claims"));
            }
            for _ in 0..count {
                let mut bytes = [0u8; CLAIM_LEN];
                reader.read(&mut bytes)?;
                reader.claims.push(TreeClaim::decode(&bytes));
            }
            check_claims(&reader.claims).map_err(|e| reader.bad(e))?;
        }
        Ok(reader)
    }

    /// The reader with the records its claims stand for (reading their trees from `repo`).
    fn expand(self, repo: &Repository) -> RepoResult<LogReader> {
        self.expand_except(repo, &[]).map(|(reader, _)| reader)
    }

    /// [`LogReader::expand`], except the claims of `kept` trees, which are
    /// returned as they are: their records do not come.
    fn expand_except(
        mut self,
        repo: &Repository,
        kept: &[ObjectId],
    ) -> RepoResult<(LogReader, Vec<TreeClaim>)> {
        let (kept, expanded): (Vec<TreeClaim>, Vec<TreeClaim>) =
            self.claims.iter().partition(|c| kept.contains(&c.tree));
        if !expanded.is_empty() {
            self.expansion = Some(Expansion::new(repo, &expanded)?);
        }
        Ok((self, kept))
    }

    fn bad(&self, detail: &str) -> RepoError {
        RepoError::Corrupt {
            path: self.path.clone(),
            detail: format!("not a valid location log: {detail}"),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> RepoResult<()> {
        let read = match &mut self.input {
            LogInput::Plain { input, .. } => input.read_exact(buf),
            LogInput::Packed(frame) => frame.read_exact(buf),
        };
        // A frame cut short or damaged is a damaged log, as a short file is.
        read.map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::InvalidData
            | std::io::ErrorKind::Other => self.bad(&format!("cut short or damaged ({e})")),
            _ => RepoError::io(&self.path, e),
        })?;
        // A packed log's checksum is over its bytes on disk (see `HashedInput`).
        if let LogInput::Plain { .. } = self.input {
            self.hasher.update(buf);
        }
        Ok(())
    }

    /// The next record, of those written out or of those the claims stand
    /// for (of one of each for a file and replica, the newer).
    fn next(&mut self) -> RepoResult<Option<LocationRecord>> {
        if self.expansion.as_ref().is_none_or(Expansion::is_empty) {
            return self.next_written();
        }
        if self.written.is_none() {
            self.written = self.next_written()?;
        }
        Ok(match self.expansion.as_mut() {
            Some(expansion) => expansion.next_beside(&mut self.written),
            None => self.written.take(),
        })
    }

    fn next_written(&mut self) -> RepoResult<Option<LocationRecord>> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut bytes = [0u8; RECORD_LEN];
        self.read(&mut bytes)?;
        self.left -= 1;
        let record = LocationRecord::decode(&bytes).map_err(|e| self.bad(&e.0))?;
        if self.previous.is_some_and(|p| p >= record.order()) {
            return Err(self.bad("records out of order"));
        }
        self.previous = Some(record.order());
        Ok(Some(record))
    }

    /// Reads the rest, checks the checksum, and returns the cards.
    fn finish(mut self) -> RepoResult<ReplicaCards> {
        while self.next_written()?.is_some() {}
        // The cards, what follows them (the checksum), and what the checksum is of.
        let (cards, mut rest, hashed): (Vec<u8>, Box<dyn Read>, blake3::Hasher) = match self.input {
            LogInput::Plain {
                mut input,
                cards_len,
            } => {
                let mut cards = vec![0u8; cards_len as usize];
                input.read_exact(&mut cards).at(&self.path)?;
                self.hasher.update(&cards);
                (cards, Box::new(input), self.hasher)
            }
            LogInput::Packed(mut frame) => {
                let mut cards = Vec::new();
                (&mut frame)
                    .take(MAX_CARDS_LEN + 1)
                    .read_to_end(&mut cards)
                    .map_err(|e| RepoError::Corrupt {
                        path: self.path.clone(),
                        detail: format!("not a valid location log: damaged ({e})"),
                    })?;
                if cards.len() as u64 > MAX_CARDS_LEN {
                    return Err(RepoError::Corrupt {
                        path: self.path.clone(),
                        detail: "not a valid location log: its cards run past their limit".into(),
                    });
                }
                let raw = (*frame).finish();
                (cards, Box::new(raw.input), raw.hasher)
            }
        };
        let mut sum = [0u8; 32];
        rest.read_exact(&mut sum).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => RepoError::Corrupt {
                path: self.path.clone(),
                detail: "not a valid location log: cut short".into(),
            },
            _ => RepoError::io(&self.path, e),
        })?;
        let mut after = [0u8; 1];
        if hashed.finalize().as_bytes() != &sum || rest.read(&mut after).at(&self.path)? != 0 {
            return Err(RepoError::Corrupt {
                path: self.path.clone(),
                detail: "not a valid location log: checksum mismatch".into(),
            });
        }
        let mut log = LocationLog::default();
        if !cards.is_empty() {
            decode_cards(&cards, self.version, &mut log).map_err(|e| RepoError::Corrupt {
                path: self.path.clone(),
                detail: format!("not a valid location log: {}", e.0),
            })?;
        }
        Ok(log.cards)
    }
}

/// The last 32 bytes of the log at `path` (its checksum); None when
/// there is no log, or one too short to have them (read whole, it says
/// how it is damaged).
fn log_tail(path: &Path) -> RepoResult<Option<[u8; 32]>> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RepoError::io(path, e)),
    };
    let len = file.metadata().at(path)?.len();
    if len < HEADER_LEN as u64 + 32 {
        return Ok(None);
    }
    let mut tail = [0u8; 32];
    file.seek(std::io::SeekFrom::End(-32)).at(path)?;
    file.read_exact(&mut tail).at(path)?;
    Ok(Some(tail))
}

/// `.dmv/locations.cards`: the log's tail it was taken from, then the
/// log's cards as a log of this version writes them.
fn kept_cards_bytes(tail: &[u8; 32], cards: &ReplicaCards) -> Vec<u8> {
    let mut bytes = tail.to_vec();
    // Into memory: cannot fail.
    let _ = encode_cards(cards, &mut bytes);
    bytes
}

/// The cards kept at `path` if they were taken from the log whose tail is
/// `tail`; None when they were not, or cannot be read (within the cards'
/// own bound).
fn read_kept_cards(path: &Path, tail: &[u8; 32]) -> Option<ReplicaCards> {
    let mut bytes = Vec::new();
    File::open(path)
        .ok()?
        .take(32 + MAX_CARDS_LEN + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let cards = bytes.strip_prefix(tail.as_slice())?;
    if cards.len() as u64 > MAX_CARDS_LEN {
        return None;
    }
    let mut log = LocationLog::default();
    decode_cards(cards, VERSION_CLAIMS, &mut log).ok()?;
    Some(log.cards)
}

/// `.dmv/locations.seen`: the last exchanges of logs that changed nothing
/// here and had no news for the other replica, newest first, each an
/// [`Copies::exchange_key`] (this log's checksum, then a digest of what
/// came). The same exchange again is not merged: a full replica fetching
/// from a hub whose tree claims differ from its own (the hub claims the
/// tree it had, the replica also the new one it fetched) merged 1.8
/// million records, 0.6 s, at every fetch that brought nothing.
const SEEN_KEPT: usize = 8;
const SEEN_ENTRY_LEN: usize = 64;

/// The exchanges kept at `path`; none when there is no such file, or one
/// that is not whole entries, at most [`SEEN_KEPT`] (it is only a cache).
pub(crate) fn read_seen(path: &Path) -> Vec<[u8; SEEN_ENTRY_LEN]> {
    let mut bytes = Vec::new();
    let read = File::open(path).and_then(|f| {
        f.take((SEEN_KEPT * SEEN_ENTRY_LEN + 1) as u64)
            .read_to_end(&mut bytes)
    });
    if read.is_err()
        || bytes.len() > SEEN_KEPT * SEEN_ENTRY_LEN
        || !bytes.len().is_multiple_of(SEEN_ENTRY_LEN)
    {
        return Vec::new();
    }
    bytes
        .chunks_exact(SEEN_ENTRY_LEN)
        .map(|entry| entry.try_into().unwrap_or([0; SEEN_ENTRY_LEN]))
        .collect()
}

/// A log of `ours` (a log's cards) that took in `cards` (newest wins),
/// and `ours` as they were.
fn taking_cards(ours: ReplicaCards, cards: &ReplicaCards) -> (LocationLog, ReplicaCards) {
    let mut log = LocationLog {
        records: BTreeMap::new(),
        cards: ours,
    };
    let before = log.cards.clone();
    for (replica, (time_ns, card)) in cards {
        log.card(*replica, *time_ns, card.clone());
    }
    (log, before)
}

fn next_of(reader: &mut Option<LogReader>) -> RepoResult<Option<LocationRecord>> {
    match reader {
        Some(r) => r.next(),
        None => Ok(None),
    }
}

/// The log (if any) and the journal's records read together, in order;
/// per key and replica the newer record of the two.
struct Merged {
    log: Option<LogReader>,
    /// The log's next record, read ahead.
    next_in_log: Option<LocationRecord>,
    journal: std::iter::Peekable<std::vec::IntoIter<LocationRecord>>,
}

impl Merged {
    fn new(mut log: Option<LogReader>, journal: Vec<LocationRecord>) -> RepoResult<Merged> {
        let next_in_log = next_of(&mut log)?;
        Ok(Merged {
            log,
            next_in_log,
            journal: journal.into_iter().peekable(),
        })
    }

    fn next(&mut self) -> RepoResult<Option<LocationRecord>> {
        let Some(logged) = self.next_in_log else {
            return Ok(self.journal.next());
        };
        let noted = match self.journal.next_if(|j| j.order() <= logged.order()) {
            Some(noted) if noted.order() < logged.order() => return Ok(Some(noted)),
            noted => noted,
        };
        self.next_in_log = next_of(&mut self.log)?;
        Ok(Some(match noted {
            Some(noted) if noted.stamp.newer_than(&logged.stamp) => noted,
            _ => logged,
        }))
    }

    /// Checks the log's checksum and returns its cards.
    fn finish(self) -> RepoResult<ReplicaCards> {
        Ok(self
            .log
            .map(LogReader::finish)
            .transpose()?
            .unwrap_or_default())
    }
}

/// Sorted records with each (key, replica) once: of repeats the newest is kept.
struct Newest<I: Iterator<Item = RepoResult<LocationRecord>>> {
    input: std::iter::Peekable<I>,
    path: PathBuf,
}

impl<I: Iterator<Item = RepoResult<LocationRecord>>> Newest<I> {
    fn next(&mut self) -> RepoResult<Option<LocationRecord>> {
        let Some(mut kept) = self.input.next().transpose()? else {
            return Ok(None);
        };
        while let Some(Ok(next)) = self.input.peek() {
            if next.order() > kept.order() {
                break;
            }
            if next.order() < kept.order() {
                return Err(RepoError::Corrupt {
                    path: self.path.clone(),
                    detail: "location records to merge in are out of order".into(),
                });
            }
            if next.stamp.newer_than(&kept.stamp) {
                kept = *next;
            }
            self.input.next();
        }
        Ok(Some(kept))
    }
}

/// [`write_framed`] packed, with `claims` (version 5, see locations.rs): what `.dmv/locations` holds.
pub(crate) fn write_packed(
    out: &mut dyn Write,
    claims: &[TreeClaim],
    count: u64,
    records: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    cards: &ReplicaCards,
) -> std::io::Result<()> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&VERSION_CLAIMS.to_le_bytes());
    header.extend_from_slice(&count.to_le_bytes());
    // The checksum covers the bytes as written: a flip the frame's decoder
    // would not notice (an unused bit of its header) is damage all the same.
    let mut raw = dmv_store::HashingWriter::new(&mut *out);
    raw.write_all(&header)?;
    // Level 1: packing a million files' records takes about as long as writing them.
    // Buffered above the frame, which then takes large pieces (records are 57 bytes).
    let mut packed = std::io::BufWriter::with_capacity(1 << 16, zstd::Encoder::new(&mut raw, 1)?);
    encode_claims(claims, &mut packed)?;
    records(&mut packed)?;
    encode_cards(cards, &mut packed)?;
    packed.into_inner().map_err(|e| e.into_error())?.finish()?;
    let sum = raw.hasher.finalize();
    out.write_all(sum.as_bytes())?;
    out.flush()
}

/// Calls `each` with every record spooled in `body` (written by this
/// process a moment ago), from its start.
fn each_spooled(
    body: &mut File,
    dir: &Path,
    each: &mut dyn FnMut(LocationRecord) -> RepoResult<()>,
) -> RepoResult<()> {
    body.rewind().at(dir)?;
    let mut input = BufReader::with_capacity(1 << 20, &*body);
    let mut bytes = [0u8; RECORD_LEN];
    loop {
        match input.read_exact(&mut bytes) {
            Ok(()) => each(
                LocationRecord::decode(&bytes).map_err(|e| RepoError::Corrupt {
                    path: dir.to_path_buf(),
                    detail: e.0,
                })?,
            )?,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(RepoError::io(dir, e)),
        }
    }
}

/// Records received in sorted pages (a remote's log), kept in an unnamed
/// file until they are merged: a remote's log may be larger than memory
/// should hold, and a kill leaves nothing behind.
pub struct LocationSpool {
    path: PathBuf,
    out: BufWriter<File>,
}

impl LocationSpool {
    /// An empty spool in an unnamed temporary file in `.dmv`.
    pub fn new(repo: &Repository) -> RepoResult<LocationSpool> {
        let file = tempfile::tempfile_in(&repo.dmv).at(&repo.dmv)?;
        Ok(LocationSpool {
            path: repo.dmv.clone(),
            out: BufWriter::with_capacity(1 << 20, file),
        })
    }

    /// Appends a record. The caller pushes them in (content id, replica) order:
    /// the merge reads them as sorted, and this does not check.
    pub fn push(&mut self, record: &LocationRecord) -> RepoResult<()> {
        self.out.write_all(&record.encode()).at(&self.path)
    }

    /// The records pushed so far, in the order pushed, read from the
    /// start without giving the spool up (its records are read again by
    /// [`LocationSpool::records`]).
    fn reread(&mut self) -> RepoResult<impl Iterator<Item = RepoResult<LocationRecord>> + '_> {
        self.out.flush().at(&self.path)?;
        let mut file = self.out.get_ref();
        file.rewind().at(&self.path)?;
        Ok(spooled_records(
            &self.path,
            BufReader::with_capacity(1 << 20, file),
        ))
    }

    /// The records pushed, in the order pushed.
    pub fn records(self) -> RepoResult<impl Iterator<Item = RepoResult<LocationRecord>>> {
        let path = self.path;
        let mut file = self
            .out
            .into_inner()
            .map_err(|e| RepoError::io(&path, e.into_error()))?;
        file.rewind().at(&path)?;
        Ok(spooled_records(
            &path,
            BufReader::with_capacity(1 << 20, file),
        ))
    }
}

/// The records a spool in `dir` holds, read from `input`.
fn spooled_records<R: Read>(
    dir: &Path,
    mut input: R,
) -> impl Iterator<Item = RepoResult<LocationRecord>> {
    let dir = dir.to_path_buf();
    std::iter::from_fn(move || {
        let mut bytes = [0u8; RECORD_LEN];
        match input.read_exact(&mut bytes) {
            Ok(()) => Some(
                LocationRecord::decode(&bytes).map_err(|e| RepoError::Corrupt {
                    path: dir.clone(),
                    detail: e.0,
                }),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) => Some(Err(RepoError::io(&dir, e))),
        }
    })
}

/// The location log read a page at a time, for sending: checked whole
/// first, in one pass over the same open file (so a log rewritten meanwhile
/// is not mixed in), then read again page by page. Memory is a page's, where
/// a decoded log of a million files' records is ~370 MB.
pub struct LocationPages {
    path: PathBuf,
    reader: Merged,
    count: u64,
    /// Records not given yet.
    left: u64,
    cards: Option<ReplicaCards>,
    /// Claims given as they are (see [`Copies::location_pages_claiming`]).
    claims: Vec<TreeClaim>,
}

impl LocationPages {
    /// The claims whose records the pages leave out (sorted, each tree and replica once).
    pub fn claims(&self) -> &[TreeClaim] {
        &self.claims
    }

    /// How many records the pages have yet to give.
    pub fn records_left(&self) -> u64 {
        self.left
    }

    /// Up to `max` records in key order, encoded as a log of their own
    /// (with the cards on the first page, which comes even when the log is
    /// empty); None when all were given. Encoded as read, not from a map of
    /// the records (which took twice the bytes).
    pub fn next_page(&mut self, max: usize) -> RepoResult<Option<Vec<u8>>> {
        let count = self.left.min(max as u64);
        let cards = match self.cards.take() {
            Some(cards) => cards,
            None if count == 0 => return Ok(None),
            None => ReplicaCards::new(),
        };
        let mut page = Vec::with_capacity(HEADER_LEN + count as usize * RECORD_LEN + 32);
        self.write_records(&mut page, count, &cards)?;
        Ok(Some(page))
    }

    /// Writes the next `count` records framed as a log with `cards`.
    fn write_records(
        &mut self,
        out: &mut dyn Write,
        count: u64,
        cards: &ReplicaCards,
    ) -> RepoResult<()> {
        let mut failed = None;
        let written = write_framed(
            out,
            count,
            &mut |out| {
                for _ in 0..count {
                    match self.reader.next() {
                        Ok(Some(record)) => {
                            self.left -= 1;
                            out.write_all(&record.encode())?
                        }
                        Ok(None) => break,
                        Err(e) => {
                            failed = Some(e);
                            return Err(std::io::Error::other(
                                "the location log could not be read",
                            ));
                        }
                    }
                }
                Ok(())
            },
            cards,
        );
        match (failed, written) {
            (Some(e), _) => Err(e),
            (None, written) => written.at(&self.path),
        }
    }

    /// The whole log, encoded as [`LocationLog::encode_to`] would.
    pub fn encode_to(mut self, out: &mut dyn Write) -> RepoResult<()> {
        let cards = self.cards.take().unwrap_or_default();
        self.write_records(out, self.count, &cards)
    }
}

/// More records than this from another replica are merged into the log
/// at once, not noted in the journal (which holds [`JOURNAL_LIMIT`]).
pub const MERGED_FROM_RECORDS: usize = 1024;

/// Records one log holds newer than, or unknown to, another it merged
/// (see [`Copies::merge_spooled_locations`]); past
/// [`LocationNews::LIMIT`] only that there were more is kept, and the
/// whole log is the answer.
#[derive(Debug, Default)]
pub struct LocationNews {
    /// The records, unsorted (empty once it overflowed).
    pub records: Vec<LocationRecord>,
    /// More than [`LocationNews::LIMIT`] records: send the whole log.
    pub overflowed: bool,
}

impl LocationNews {
    /// 65,536 records: 3.7 MB sent at most; past it, the whole log is.
    pub const LIMIT: usize = 1 << 16;

    /// No news at all.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && !self.overflowed
    }

    fn add(&mut self, record: LocationRecord) {
        if self.overflowed {
            return;
        }
        if self.records.len() == Self::LIMIT {
            self.overflowed = true;
            self.records = Vec::new();
            return;
        }
        self.records.push(record);
    }
}

impl Copies<'_> {
    /// The location log, to be read in pages (see [`LocationPages`]), with
    /// this replica's current card among the cards.
    pub fn location_pages(&self) -> RepoResult<LocationPages> {
        self.location_pages_claiming(&[])
    }

    /// [`Copies::location_pages`] for a replica that reads the claims
    /// of `trees` itself ([`Copies::trees_read_for_claims`]): the log's
    /// claims of them are given as they are
    /// ([`LocationPages::claims`]), and the records they stand for are not
    /// in the pages. The receiver's [`Copies::records_with_claims`]
    /// reads the two as these pages would read without them.
    pub fn location_pages_claiming(&self, trees: &[ObjectId]) -> RepoResult<LocationPages> {
        let path = self.locations_path();
        // The journal first: a fold meanwhile puts its records in the log read next (see `Merged`).
        let journal = self.read_journal()?.records;
        let file = match File::open(&path) {
            Ok(file) => Some(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(RepoError::io(path, e)),
        };
        let mut claims = Vec::new();
        let mut log = |file: Option<&File>| {
            file.map(|f| {
                let (reader, kept) = f
                    .try_clone()
                    .at(&path)
                    .and_then(|f| LogReader::of(&path, f))
                    .and_then(|r| r.expand_except(self, trees))?;
                claims = kept;
                RepoResult::Ok(reader)
            })
            .transpose()
        };
        let mut check = Merged::new(log(file.as_ref())?, journal.clone())?;
        let mut count = 0;
        while check.next()?.is_some() {
            count += 1;
        }
        let cards = check.finish()?;
        if let Some(mut f) = file.as_ref() {
            f.rewind().at(&path)?;
        }
        let reader = Merged::new(log(file.as_ref())?, journal)?;
        let mut named = LocationLog {
            records: BTreeMap::new(),
            cards,
        };
        self.with_my_card(&mut named);
        Ok(LocationPages {
            path,
            reader,
            count,
            left: count,
            cards: Some(named.cards),
            claims,
        })
    }

    /// Some records (what one transfer taught), to be given in pages as
    /// [`Copies::location_pages`] gives the whole log, with this replica's name.
    /// Of two records of one file and replica, the newer is given.
    pub fn location_pages_of(&self, mut records: Vec<LocationRecord>) -> RepoResult<LocationPages> {
        records.sort_unstable_by(|a, b| {
            a.order()
                .cmp(&b.order())
                .then(b.stamp.time_ns.cmp(&a.stamp.time_ns))
        });
        records.dedup_by_key(|r| r.order());
        let count = records.len() as u64;
        let mut named = LocationLog::default();
        self.with_my_card(&mut named);
        Ok(LocationPages {
            path: self.locations_path(),
            reader: Merged::new(None, records)?,
            count,
            left: count,
            cards: Some(named.cards),
            claims: Vec::new(),
        })
    }

    fn journal_path(&self) -> PathBuf {
        self.dmv.join("locations.journal")
    }

    /// The journal's records (none when there is no journal).
    pub(crate) fn read_journal(&self) -> RepoResult<Journal> {
        let path = self.journal_path();
        match std::fs::read(&path) {
            Ok(bytes) => {
                parse_journal(&bytes).map_err(|e| RepoError::Corrupt { path, detail: e.0 })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Journal::default()),
            Err(e) => Err(RepoError::io(path, e)),
        }
    }

    /// The log and the journal, read together from their starts.
    fn open_merged(&self) -> RepoResult<Merged> {
        let journal = self.read_journal()?.records;
        let log = LogReader::open(&self.locations_path())?
            .map(|r| r.expand(self))
            .transpose()?;
        Merged::new(log, journal)
    }

    /// The tree claims of the log on disk (none before version 5).
    pub(crate) fn read_claims(&self) -> RepoResult<Vec<TreeClaim>> {
        Ok(LogReader::open(&self.locations_path())?
            .map(|r| r.claims)
            .unwrap_or_default())
    }

    /// Merges `records` (sorted by key and replica) and `cards` into the
    /// location log under its lock, as [`LocationLog::merge`] does (per key
    /// and replica the newest wins), streamed through a temporary file; with
    /// `my_name`, this replica's current name too. Returns how many records
    /// and cards changed. A damaged log is refused before anything is written.
    pub fn merge_locations(
        &self,
        records: impl IntoIterator<Item = RepoResult<LocationRecord>>,
        cards: &ReplicaCards,
        my_card: bool,
    ) -> RepoResult<usize> {
        let _lock = self.lock_locations()?;
        self.merge_locked(records, cards, my_card, None, &[])
    }

    /// [`Copies::merge_locations`] of another replica's log as it came:
    /// its `claims` (read against this replica's trees) and the records
    /// `spool` holds beside them, sorted; `with_news`, also returning what
    /// this log knows that it did not: the news to send back, so a drop
    /// heard of here travels on with a fetch. A log written as this one
    /// is (the same claims, the same records, no journal here) whose cards
    /// are no news reads as this one does: nothing is merged. A fetch that
    /// brought nothing from a hub of 100,000 files that 18 replicas had
    /// cloned spent 0.3 s expanding 1.8 million records on each side only
    /// to find them equal.
    pub fn merge_spooled_locations(
        &self,
        mut spool: LocationSpool,
        claims: &[TreeClaim],
        cards: &ReplicaCards,
        with_news: bool,
    ) -> RepoResult<(usize, LocationNews)> {
        let _lock = self.lock_locations()?;
        let mut news = LocationNews::default();
        if self.written_alike(&mut spool, claims, cards)? {
            return Ok((0, news));
        }
        let exchange = self.exchange_key(&mut spool, claims, cards)?;
        let seen_at = self.dmv.join("locations.seen");
        let seen = exchange.map(|_| read_seen(&seen_at)).unwrap_or_default();
        if exchange.is_some_and(|key| seen.contains(&key)) {
            return Ok((0, news));
        }
        let records = self.records_with_claims(claims, spool.records()?)?;
        // The news is taken whether asked for or not: an exchange is kept as
        // seen only when it had none to give back either.
        let trees: Vec<ObjectId> = claims.iter().map(|claim| claim.tree).collect();
        let changed = self.merge_locked(records, cards, false, Some(&mut news), &trees)?;
        if let Some(key) = exchange.filter(|_| changed == 0 && news.is_empty()) {
            let kept = std::iter::once(key).chain(seen).take(SEEN_KEPT);
            let _ = crate::atomic::write_cache(&seen_at, &kept.collect::<Vec<_>>().concat());
        }
        if !with_news {
            news = LocationNews::default();
        }
        Ok((changed, news))
    }

    /// What a merge of another replica's log (`claims`, the records in
    /// `theirs`, `cards`) into this one depends on: this log's checksum,
    /// then a digest of the other log and of which of the trees it claims
    /// are here (a claim of a tree not here stands for nothing, until the
    /// tree comes). None while the journal holds records, or there is no log.
    fn exchange_key(
        &self,
        theirs: &mut LocationSpool,
        claims: &[TreeClaim],
        cards: &ReplicaCards,
    ) -> RepoResult<Option<[u8; SEEN_ENTRY_LEN]>> {
        if !self.read_journal()?.records.is_empty() {
            return Ok(None);
        }
        let Some(tail) = log_tail(&self.locations_path())? else {
            return Ok(None);
        };
        let mut digest = blake3::Hasher::new();
        let mut claimed = Vec::new();
        encode_claims(claims, &mut claimed).at(&self.dmv)?;
        digest.update(&claimed);
        for claim in claims {
            digest.update(&[self.store.contains(&claim.tree)? as u8]);
        }
        for record in theirs.reread()? {
            digest.update(&record?.encode());
        }
        let mut named = Vec::new();
        encode_cards(cards, &mut named).at(&self.dmv)?;
        digest.update(&named);
        let mut key = [0u8; SEEN_ENTRY_LEN];
        key[..32].copy_from_slice(&tail);
        key[32..].copy_from_slice(digest.finalize().as_bytes());
        Ok(Some(key))
    }

    /// Whether the log here, with no journal, holds exactly `claims` and
    /// the records `theirs` holds, and `cards` would change none of its
    /// cards. Under the lock. Read to its end, a damaged log is refused.
    fn written_alike(
        &self,
        theirs: &mut LocationSpool,
        claims: &[TreeClaim],
        cards: &ReplicaCards,
    ) -> RepoResult<bool> {
        if !self.read_journal()?.records.is_empty() {
            return Ok(false);
        }
        let Some(mut ours) = LogReader::open(&self.locations_path())? else {
            return Ok(false);
        };
        if ours.claims != claims {
            return Ok(false);
        }
        let mut theirs = theirs.reread()?;
        loop {
            match (ours.next_written()?, theirs.next().transpose()?) {
                (None, None) => break,
                (Some(m), Some(o)) if m == o => {}
                _ => return Ok(false),
            }
        }
        let (log, before) = taking_cards(ours.finish()?, cards);
        Ok(log.cards == before)
    }

    /// [`Copies::merge_locations`] under the lock, folding the journal
    /// in; the records of ours that `theirs` lacks or holds older go in `news`.
    /// `claimed_by_theirs`: the trees the records' log claimed, which the
    /// rewrite may claim too.
    fn merge_locked(
        &self,
        records: impl IntoIterator<Item = RepoResult<LocationRecord>>,
        cards: &ReplicaCards,
        my_card: bool,
        mut news: Option<&mut LocationNews>,
        claimed_by_theirs: &[ObjectId],
    ) -> RepoResult<usize> {
        let mut tell = |record: LocationRecord| {
            if let Some(news) = news.as_deref_mut() {
                news.add(record);
            }
        };
        let path = self.locations_path();
        let mut ours = self.open_merged()?;
        let mut theirs = Newest {
            input: records.into_iter().peekable(),
            path: path.clone(),
        };
        let body = tempfile::tempfile_in(&self.dmv).at(&self.dmv)?;
        let mut out = BufWriter::with_capacity(1 << 20, body);
        let (mut count, mut changed) = (0u64, 0usize);
        let (mut mine, mut other) = (ours.next()?, theirs.next()?);
        loop {
            let record = match (mine, other) {
                (None, None) => break,
                (Some(m), None) => {
                    mine = ours.next()?;
                    tell(m);
                    m
                }
                (None, Some(o)) => {
                    other = theirs.next()?;
                    changed += 1;
                    o
                }
                (Some(m), Some(o)) => match o.order().cmp(&m.order()) {
                    std::cmp::Ordering::Less => {
                        other = theirs.next()?;
                        changed += 1;
                        o
                    }
                    std::cmp::Ordering::Greater => {
                        mine = ours.next()?;
                        tell(m);
                        m
                    }
                    std::cmp::Ordering::Equal => {
                        (mine, other) = (ours.next()?, theirs.next()?);
                        changed += o.stamp.newer_than(&m.stamp) as usize;
                        if m.stamp.newer_than(&o.stamp) {
                            tell(m);
                        }
                        if o.stamp.newer_than(&m.stamp) {
                            o
                        } else {
                            m
                        }
                    }
                },
            };
            out.write_all(&record.encode()).at(&self.dmv)?;
            count += 1;
        }
        let (mut log, before) = taking_cards(ours.finish()?, cards);
        if my_card {
            self.with_my_card(&mut log);
        }
        changed += log
            .cards
            .iter()
            .filter(|(k, v)| before.get(k) != Some(v))
            .count();
        // Nothing learnt (a fetch or push that brought nothing new): the log and journal stand.
        if changed == 0 {
            return Ok(0);
        }
        let mut body = out
            .into_inner()
            .map_err(|e| RepoError::io(&self.dmv, e.into_error()))?;
        // What tree claims can stand for is left out (see location_claims.rs):
        // a pass to find the claims, one to count what is left, one to write it.
        let mut claims = match count >= claims_from_records() {
            true => {
                let mut finder = ClaimFinder::new(self, claimed_by_theirs)?;
                each_spooled(&mut body, &self.dmv, &mut |r| {
                    finder.see(&r);
                    Ok(())
                })?;
                Some(finder.claims())
            }
            false => None,
        };
        let written = match claims.as_mut() {
            Some(claims) => {
                let mut kept = 0;
                each_spooled(&mut body, &self.dmv, &mut |r| {
                    kept += !claims.cover(&r) as u64;
                    Ok(())
                })?;
                claims.rewind();
                claims.keep_used();
                kept
            }
            None => count,
        };
        let sorted = claims.as_ref().map(|c| c.sorted()).unwrap_or_default();
        body.rewind().at(&self.dmv)?;
        let mut body = BufReader::with_capacity(1 << 20, body);
        crate::atomic::write_atomic_with(&path, &mut |out| {
            write_packed(
                out,
                &sorted,
                written,
                &mut |out| match claims.as_mut() {
                    None => std::io::copy(&mut body, out).map(drop),
                    Some(claims) => {
                        let mut bytes = [0u8; RECORD_LEN];
                        for _ in 0..count {
                            body.read_exact(&mut bytes)?;
                            let r = LocationRecord::decode(&bytes)
                                .map_err(|e| std::io::Error::other(e.0))?;
                            if !claims.cover(&r) {
                                out.write_all(&bytes)?;
                            }
                        }
                        Ok(())
                    }
                },
                &log.cards,
            )
        })?;
        // Folded in: kept after a crash here, it is read again with the log, and counts once.
        match std::fs::remove_file(self.journal_path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(RepoError::io(self.journal_path(), e))
            }
            _ => {}
        }
        Ok(changed)
    }

    /// Adds records learnt now (a `get`, a drop: a few) to the journal, as
    /// [`Copies::merge_locations`] would add them to the log, without
    /// rewriting it: unless the journal is full, when they are merged.
    /// (This replica's name is not needed in the log: it is added to every
    /// log it sends, see [`Copies::location_pages`].)
    pub fn note_locations(&self, records: Vec<LocationRecord>) -> RepoResult<()> {
        let _lock = self.lock_locations()?;
        self.note_locked(records)
    }

    /// [`Copies::merge_locations`] of a few records another replica
    /// sent (what a `get` or a drop there changed): noted in the journal, as
    /// this replica's own few are; when their cards say something the log
    /// does not (each replica's name, URLs and metered flag as known; a
    /// card only stamped again is no news), the log takes the cards alone
    /// first, its claims and records copied as they are. More records are
    /// merged. Returns how many records were taken in. A hub told of one
    /// file got on a phone rewrote its whole log for it: ~100 ms at 100,000
    /// files, and still for a phone's first `get`, whose card was news.
    pub fn merge_few_locations(
        &self,
        mut records: Vec<LocationRecord>,
        cards: &ReplicaCards,
    ) -> RepoResult<usize> {
        let _lock = self.lock_locations()?;
        if records.len() > MERGED_FROM_RECORDS {
            records.sort_by_key(LocationRecord::order_then_age);
            return self.merge_locked(records.into_iter().map(Ok), cards, false, None, &[]);
        }
        self.merge_cards_locked(cards)?;
        let taken = records.len();
        self.note_locked(records)?;
        Ok(taken)
    }

    /// The log's cards, from `.dmv/locations.cards` when that was taken
    /// from the log as it is (it starts with the log's last 32 bytes, the
    /// log's checksum); else read from the log whole (the cards come after
    /// every record), and kept there for the next time. A hub told of a
    /// phone's few new copies compares the phone's card with these: read
    /// whole each time, ~26 ms of CPU for a hub of 5,000 photos and 50
    /// replicas, once for every batch a phone's mount fetched. Under the
    /// lock (the log cannot change between its tail and its cards).
    fn log_cards_locked(&self) -> RepoResult<ReplicaCards> {
        let path = self.locations_path();
        let Some(tail) = log_tail(&path)? else {
            return Ok(ReplicaCards::new());
        };
        let kept_at = self.dmv.join("locations.cards");
        if let Some(cards) = read_kept_cards(&kept_at, &tail) {
            return Ok(cards);
        }
        let cards = match LogReader::open(&path)? {
            Some(log) => log.finish()?,
            None => ReplicaCards::new(),
        };
        // A cache: written unsynced, and one that cannot be read is read again from the log.
        let _ = crate::atomic::write_cache(&kept_at, &kept_cards_bytes(&tail, &cards));
        Ok(cards)
    }

    /// Takes `cards` into the log (per replica the newer, as
    /// [`LocationLog::card`] does) without touching its records: its
    /// claims and the records written out are copied as they are, unread
    /// as records, so no claimed tree is listed (the journal stays, and
    /// reads on top as before). The log is rewritten only when a card is
    /// news (a card only stamped again is none). Under the lock.
    fn merge_cards_locked(&self, cards: &ReplicaCards) -> RepoResult<()> {
        let path = self.locations_path();
        let known = self.log_cards_locked()?;
        let news = cards
            .iter()
            .any(|(replica, (_, card))| known.get(replica).map(|(_, c)| c) != Some(card));
        if !news {
            return Ok(());
        }
        let mut log = LocationLog {
            records: BTreeMap::new(),
            cards: known.clone(),
        };
        for (replica, (time_ns, card)) in cards {
            log.card(*replica, *time_ns, card.clone());
        }
        // Other than the log's, but older than it: no news after all.
        if log.cards == known {
            return Ok(());
        }
        let mut reader = LogReader::open(&path)?;
        let claims = reader
            .as_mut()
            .map(|r| std::mem::take(&mut r.claims))
            .unwrap_or_default();
        let count = reader.as_ref().map_or(0, |r| r.left);
        let mut failed = None;
        let written = crate::atomic::write_atomic_with(&path, &mut |out| {
            write_packed(
                out,
                &claims,
                count,
                &mut |out| {
                    let Some(mut reader) = reader.take() else {
                        return Ok(());
                    };
                    // The checksum again: what is copied is the log checked above.
                    let copied = loop {
                        match reader.next_written() {
                            Ok(Some(record)) => out.write_all(&record.encode())?,
                            Ok(None) => break reader.finish().map(drop),
                            Err(e) => break Err(e),
                        }
                    };
                    copied.map_err(|e| {
                        failed = Some(e);
                        std::io::Error::other("the location log could not be read")
                    })
                },
                &log.cards,
            )
        });
        match (failed, written) {
            (Some(e), _) => Err(e),
            (None, written) => written,
        }
    }

    /// [`Copies::note_locations`] under the lock.
    fn note_locked(&self, mut records: Vec<LocationRecord>) -> RepoResult<()> {
        let journal = self.read_journal()?;
        // Counted as appended: a file noted again and again (got, dropped, got) must not grow it without end.
        if journal.appended + records.len() > JOURNAL_LIMIT {
            records.sort_by_key(LocationRecord::order_then_age);
            return self
                .merge_locked(
                    records.into_iter().map(Ok),
                    &ReplicaCards::new(),
                    false,
                    None,
                    &[],
                )
                .map(drop);
        }
        if records.is_empty() {
            return Ok(());
        }
        let path = self.journal_path();
        // Nothing whole in it (new, or its creation cut short): it starts again with a header.
        let mut bytes = if journal.valid_len == 0 {
            journal_header()
        } else {
            Vec::new()
        };
        bytes.extend(journal_frame(&records));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .at(&path)?;
        // An append a crash cut short is cut off, then this one written whole and synced.
        file.set_len(journal.valid_len as u64).at(&path)?;
        dmv_os::FileExt::write_all_at(&file, &bytes, journal.valid_len as u64).at(&path)?;
        file.sync_all().at(&path)?;
        if journal.valid_len == 0 {
            dmv_os::sync_dir(&self.dmv).at(&self.dmv)?;
        }
        Ok(())
    }

    /// Records that `replica` holds (or not) the data of `keys`, as of now.
    pub fn record_locations(
        &self,
        keys: &[ObjectId],
        replica: ReplicaId,
        present: bool,
    ) -> RepoResult<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let stamp = Stamp {
            time_ns: now_ns(),
            present,
        };
        self.note_locations(
            keys.iter()
                .map(|&key| LocationRecord {
                    key,
                    replica,
                    stamp,
                })
                .collect(),
        )
    }

    /// The records of the location log that `keep` chooses, with its cards
    /// (empty when none was written yet), read record by record and checked
    /// whole: a command holds what it asked for, not the log (two million
    /// records at a million files are ~370 MB as a map).
    pub fn locations_where(
        &self,
        mut keep: impl FnMut(&LocationRecord) -> bool,
    ) -> RepoResult<LocationLog> {
        let mut log = LocationLog::default();
        let mut reader = self.open_merged()?;
        while let Some(r) = reader.next()? {
            if keep(&r) {
                log.records.insert(r.order(), r.stamp);
            }
        }
        log.cards = reader.finish()?;
        Ok(log)
    }

    /// What [`Copies::locations_where`] reads of the records of `keys`
    /// (each with a path naming it, HEAD's say) and of the replicas that
    /// `replicas` chooses by the log's cards, with the cards: the same
    /// records, without listing every file of a claimed tree. A claim of a
    /// replica not chosen is not read at all, and one of a chosen replica
    /// is read at the keys' paths (see [`Copies::tree_claims_files`]): a
    /// `get` of one file after `whereis`, whose log claims HEAD's tree,
    /// read about 600 tree nodes of 100,000 files to find that file's holders.
    pub fn locations_of(
        &self,
        keys: &BTreeMap<ObjectId, Vec<u8>>,
        mut replicas: impl FnMut(&ReplicaId, &ReplicaCards) -> bool,
    ) -> RepoResult<LocationLog> {
        let mut log = LocationLog::default();
        let journal = self.read_journal()?.records;
        let mut claims = Vec::new();
        if let Some(mut reader) = LogReader::open(&self.locations_path())? {
            claims = std::mem::take(&mut reader.claims);
            while let Some(r) = reader.next_written()? {
                if keys.contains_key(&r.key) {
                    log.record(r.key, r.replica, r.stamp);
                }
            }
            log.cards = reader.finish()?;
        }
        // Per file and replica the newest of the log's, the journal's and
        // the claims' records, as the merged reading takes it.
        for r in journal.into_iter().filter(|r| keys.contains_key(&r.key)) {
            log.record(r.key, r.replica, r.stamp);
        }
        let cards = &log.cards;
        log.records
            .retain(|(_, replica), _| replicas(replica, cards));
        // Claims come sorted by tree: each tree is read once for all its replicas.
        let mut read: Option<(ObjectId, Vec<ObjectId>)> = None;
        for claim in claims {
            if !replicas(&claim.replica, &log.cards) {
                continue;
            }
            if read.as_ref().is_none_or(|(tree, _)| *tree != claim.tree) {
                read = Some((claim.tree, self.tree_claims_files(&claim.tree, keys)?));
            }
            let stamp = Stamp {
                time_ns: claim.time_ns,
                present: true,
            };
            for key in read.iter().flat_map(|(_, claimed)| claimed) {
                log.record(*key, claim.replica, stamp);
            }
        }
        Ok(log)
    }

    /// The whole location log.
    pub fn load_locations(&self) -> RepoResult<LocationLog> {
        self.locations_where(|_| true)
    }

    /// Reads the location log and its journal through: Ok when they are whole (or absent).
    /// The claims are not expanded: what they stand for is read from trees
    /// the store's own check covers, and listing a 100,000-file tree would
    /// hold its files in memory through the rest of `fsck`.
    pub(crate) fn check_locations(&self) -> RepoResult<()> {
        self.read_journal()?;
        match LogReader::open(&self.locations_path())? {
            Some(log) => log.finish().map(drop),
            None => Ok(()),
        }
    }

    /// The lock under which the location log is rewritten (so no two writers lose each other's records).
    fn lock_locations(&self) -> RepoResult<File> {
        let lock_path = self.dmv.join("locations.lock");
        crate::atomic::hold_lock_file(&lock_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(k: u8, r: u8, t: u64, present: bool) -> LocationRecord {
        LocationRecord {
            key: ObjectId([k; 32]),
            replica: ReplicaId([r; 16]),
            stamp: Stamp {
                time_ns: t,
                present,
            },
        }
    }

    fn arb_records() -> impl Strategy<Value = Vec<LocationRecord>> {
        proptest::collection::vec((0u8..6, 0u8..3, 0u64..4, any::<bool>()), 0..30).prop_map(|rs| {
            rs.into_iter()
                .map(|(k, r, t, p)| record(k, r, t, p))
                .collect()
        })
    }

    fn log_of(records: &[LocationRecord], names: &[(u8, u64, &str)]) -> LocationLog {
        let mut log = LocationLog::default();
        for r in records {
            log.record(r.key, r.replica, r.stamp);
        }
        for (r, t, n) in names {
            log.card(
                ReplicaId([*r; 16]),
                *t,
                crate::replica::locations::ReplicaCard::named(n),
            );
        }
        log
    }

    /// A transfer's records (the remote's, and this replica's for what it
    /// holds) go to the journal in one frame: one write and one sync per
    /// `get`, not two.
    #[test]
    fn a_transfer_notes_the_remote_and_this_replica_in_one_append() {
        use crate::replica::location_journal::{FRAME_HEADER_LEN, JOURNAL_HEADER_LEN};
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let me = repo.copies().replica_id().unwrap();
        let frame = |records: usize| FRAME_HEADER_LEN + records * RECORD_LEN + 32;
        // A replica that never dropped holds what it has: both recorded.
        repo.copies()
            .record_held_here(&[ObjectId([1; 32])], vec![record(1, 9, 5, true)])
            .unwrap();
        let journal = repo.copies().read_journal().unwrap();
        assert_eq!(journal.appended, 2);
        assert_eq!(journal.valid_len, JOURNAL_HEADER_LEN + frame(2));
        let mut holders: Vec<ReplicaId> = journal.records.iter().map(|r| r.replica).collect();
        holders.sort();
        let mut expected = vec![me, ReplicaId([9; 16])];
        expected.sort();
        assert_eq!(holders, expected);
        assert!(journal.records.iter().all(|r| r.stamp.present));
        // Nothing held here to record: the remote's records alone, one frame.
        repo.copies()
            .record_held_here(&[], vec![record(2, 9, 6, true)])
            .unwrap();
        let journal = repo.copies().read_journal().unwrap();
        assert_eq!(journal.appended, 3);
        assert_eq!(journal.valid_len, JOURNAL_HEADER_LEN + frame(2) + frame(1));
        // Nothing at all: nothing appended.
        repo.copies().record_held_here(&[], Vec::new()).unwrap();
        assert_eq!(repo.copies().read_journal().unwrap().appended, 3);
        // More than the journal holds: both go to the log, each side whole.
        let many: Vec<ObjectId> = (0..JOURNAL_LIMIT as u32)
            .map(|i| {
                let mut id = [7; 32];
                id[..4].copy_from_slice(&i.to_le_bytes());
                ObjectId(id)
            })
            .collect();
        repo.copies()
            .record_held_here(&many, vec![record(3, 9, 7, true)])
            .unwrap();
        let loaded = repo.copies().load_locations().unwrap();
        assert!(many
            .iter()
            .all(|id| loaded.records.contains_key(&(*id, me))));
        assert!(loaded
            .records
            .contains_key(&(ObjectId([3; 32]), ReplicaId([9; 16]))));
        assert!(repo.copies().read_journal().unwrap().appended <= 3);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The streamed merge on disk does what the in-memory merge does,
        /// repeats among the records merged in included, and counts the same.
        #[test]
        fn merging_on_disk_is_merging_in_memory(ours in arb_records(), mut theirs in arb_records(), with_log in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
            let ours = log_of(&ours, &[(1, 5, "laptop")]);
            if with_log {
                std::fs::write(repo.copies().locations_path(), ours.encode()).unwrap();
            }
            let mut expected = if with_log { ours.clone() } else { LocationLog::default() };
            theirs.sort_by_key(|r| r.order());
            let names: ReplicaCards = [(ReplicaId([1; 16]), (6, crate::replica::locations::ReplicaCard::named("nas")))].into();
            let mut theirs_log = log_of(&theirs, &[]);
            theirs_log.cards = names.clone();
            let expected_changed = expected.merge(&theirs_log);
            let changed = repo.copies().merge_locations(theirs.iter().copied().map(Ok), &names, false).unwrap();
            let merged = repo.copies().load_locations().unwrap();
            prop_assert_eq!(&merged, &expected);
            prop_assert_eq!(changed, expected_changed);
            repo.copies().check_locations().unwrap();
            // Read for some records, it holds those and the names.
            let some = repo.copies().locations_where(|r| r.key.0[0] % 2 == 0 && r.stamp.present).unwrap();
            let expected_some: BTreeMap<_, _> = merged.records.iter().filter(|(k, s)| k.0 .0[0] % 2 == 0 && s.present).map(|(k, s)| (*k, *s)).collect();
            prop_assert_eq!(&some.records, &expected_some);
            prop_assert_eq!(&some.cards, &merged.cards);
            // Read for sending, in pages or encoded whole, it is the log with this replica's name.
            // (Written down first, so the name's time is the file's.)
            repo.copies().merge_locations(std::iter::empty(), &ReplicaCards::new(), true).unwrap();
            let named = repo.copies().load_locations().unwrap();
            prop_assert_eq!(&named.records, &merged.records);
            prop_assert!(named.cards.len() == merged.cards.len() + 1);
            let mut pages = repo.copies().location_pages().unwrap();
            let mut sent = LocationLog::default();
            let mut first = true;
            while let Some(page) = pages.next_page(7).unwrap() {
                let page = LocationLog::decode(&page).unwrap();
                prop_assert!(page.records.len() <= 7 && (first || !page.records.is_empty()));
                prop_assert!(first || page.cards.is_empty());
                first = false;
                sent.records.extend(page.records);
                sent.cards.extend(page.cards);
            }
            prop_assert!(!first);
            prop_assert_eq!(&sent, &named);
            let mut whole = Vec::new();
            repo.copies().location_pages().unwrap().encode_to(&mut whole).unwrap();
            prop_assert_eq!(whole, named.encode());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Records noted in the journal read, and are sent, as if each
        /// note had been merged into the log.
        #[test]
        fn noting_in_the_journal_reads_as_merging(steps in proptest::collection::vec((any::<bool>(), arb_records()), 1..6), with_log in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
            let mut expected = LocationLog::default();
            if with_log {
                expected = log_of(&[record(1, 1, 2, true), record(4, 2, 1, false)], &[(1, 5, "laptop")]);
                std::fs::write(repo.copies().locations_path(), expected.encode()).unwrap();
            }
            for (note, mut records) in steps {
                match note {
                    true => repo.copies().note_locations(records.clone()).unwrap(),
                    false => {
                        records.sort_by_key(|r| r.order());
                        let had_journal = repo.copies().journal_path().exists();
                        let changed = repo.copies().merge_locations(records.iter().copied().map(Ok), &ReplicaCards::new(), false).unwrap();
                        // A merge that learns something folds the journal in; one that learns nothing writes nothing.
                        prop_assert_eq!(repo.copies().journal_path().exists(), had_journal && changed == 0);
                    }
                }
                for r in &records {
                    expected.record(r.key, r.replica, r.stamp);
                }
                prop_assert_eq!(&repo.copies().load_locations().unwrap(), &expected);
            }
            repo.copies().check_locations().unwrap();
            let mut sent = LocationLog::default();
            let mut pages = repo.copies().location_pages().unwrap();
            while let Some(page) = pages.next_page(5).unwrap() {
                sent.records.extend(LocationLog::decode(&page).unwrap().records);
            }
            prop_assert_eq!(&sent.records, &expected.records);
        }
    }

    #[test]
    fn a_few_records_are_appended_without_rewriting_the_log_and_an_append_cut_short_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        repo.copies()
            .merge_locations([Ok(record(1, 1, 1, true))], &ReplicaCards::new(), false)
            .unwrap();
        let log = std::fs::read(repo.copies().locations_path()).unwrap();
        repo.copies()
            .note_locations(vec![record(2, 1, 1, true)])
            .unwrap();
        repo.copies()
            .record_locations(&[ObjectId([3; 32])], ReplicaId([1; 16]), false)
            .unwrap();
        assert_eq!(
            std::fs::read(repo.copies().locations_path()).unwrap(),
            log,
            "the log is not rewritten"
        );
        let journal = std::fs::read(repo.copies().journal_path()).unwrap();
        assert_eq!(
            journal.len(),
            crate::replica::location_journal::JOURNAL_HEADER_LEN + 2 * (8 + RECORD_LEN + 32)
        );
        // A kill in the middle of an append: the frame is cut short.
        let mut torn = journal.clone();
        torn.extend(&journal_frame(&[record(9, 1, 1, true)])[..40]);
        std::fs::write(repo.copies().journal_path(), &torn).unwrap();
        let keys = |repo: &Repository| {
            repo.copies()
                .load_locations()
                .unwrap()
                .records
                .keys()
                .map(|(k, _)| k.0[0])
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&repo), vec![1, 2, 3]);
        repo.copies()
            .note_locations(vec![record(4, 1, 1, true)])
            .unwrap();
        assert_eq!(keys(&repo), vec![1, 2, 3, 4]);
        assert_eq!(
            std::fs::read(repo.copies().journal_path()).unwrap().len(),
            journal.len() + 8 + RECORD_LEN + 32
        );
        // Once the journal would hold more than its limit, it is folded into the log.
        let many: Vec<LocationRecord> = (0..JOURNAL_LIMIT as u32)
            .map(|i| LocationRecord {
                key: ObjectId(blake3::hash(&i.to_le_bytes()).into()),
                replica: ReplicaId([7; 16]),
                stamp: Stamp {
                    time_ns: 1,
                    present: true,
                },
            })
            .collect();
        repo.copies().note_locations(many).unwrap();
        assert!(!repo.copies().journal_path().exists());
        assert_eq!(
            repo.copies().load_locations().unwrap().records.len(),
            4 + JOURNAL_LIMIT
        );
        // A damaged frame before the last is damage, reported by every reading.
        repo.copies()
            .note_locations(vec![record(5, 1, 1, true)])
            .unwrap();
        repo.copies()
            .note_locations(vec![record(6, 1, 1, true)])
            .unwrap();
        let mut bytes = std::fs::read(repo.copies().journal_path()).unwrap();
        bytes[crate::replica::location_journal::JOURNAL_HEADER_LEN + 9] ^= 1;
        std::fs::write(repo.copies().journal_path(), &bytes).unwrap();
        assert!(repo
            .copies()
            .check_locations()
            .unwrap_err()
            .to_string()
            .contains("journal"));
        assert!(repo
            .copies()
            .note_locations(vec![record(7, 1, 1, true)])
            .is_err());
        assert_eq!(std::fs::read(repo.copies().journal_path()).unwrap(), bytes);
        assert!(repo.maintenance().reset_damaged_locations().unwrap());
        repo.copies().check_locations().unwrap();
    }

    /// Another replica's few records (a phone's `get`, told to its hub) are
    /// noted in the journal, card stamped again or not; a new name is
    /// taken into the log alone, and many records are merged into it.
    #[test]
    fn a_few_records_from_another_replica_are_noted_unless_their_cards_are_news() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let phone = log_of(&[], &[(2, 10, "phone")]).cards;
        repo.copies()
            .merge_locations([Ok(record(1, 1, 1, true))], &phone, false)
            .unwrap();
        let log = std::fs::read(repo.copies().locations_path()).unwrap();
        let stamped_again = log_of(&[], &[(2, 20, "phone")]).cards;
        for (i, cards) in [&phone, &stamped_again, &ReplicaCards::new()]
            .into_iter()
            .enumerate()
        {
            let taken = repo
                .copies()
                .merge_few_locations(vec![record(10 + i as u8, 2, 5, true)], cards)
                .unwrap();
            assert_eq!(taken, 1);
        }
        assert_eq!(
            std::fs::read(repo.copies().locations_path()).unwrap(),
            log,
            "the log was rewritten"
        );
        let read = repo.copies().load_locations().unwrap();
        assert_eq!(read.records.len(), 4);
        assert_eq!(read.cards, phone);

        let renamed = log_of(&[], &[(2, 30, "phone of ann")]).cards;
        repo.copies()
            .merge_few_locations(vec![record(20, 2, 5, true)], &renamed)
            .unwrap();
        assert_eq!(
            repo.copies().read_journal().unwrap().records.len(),
            4,
            "a new name's record is noted too, the journal kept"
        );
        let bytes = std::fs::read(repo.copies().locations_path()).unwrap();
        assert_ne!(bytes, log, "the new name is in the log");
        assert_eq!(u64::from_le_bytes(bytes[12..20].try_into().unwrap()), 1);
        let read = repo.copies().load_locations().unwrap();
        assert_eq!((read.records.len(), &read.cards), (5, &renamed));
        // An older card than the log's is no news: the log stands.
        repo.copies()
            .merge_few_locations(vec![], &log_of(&[], &[(2, 25, "old name")]).cards)
            .unwrap();
        assert_eq!(
            std::fs::read(repo.copies().locations_path()).unwrap(),
            bytes
        );
        let many: Vec<LocationRecord> = (0..=MERGED_FROM_RECORDS as u32)
            .map(|i| LocationRecord {
                key: ObjectId(blake3::hash(&i.to_le_bytes()).into()),
                replica: ReplicaId([2; 16]),
                stamp: Stamp {
                    time_ns: 1,
                    present: true,
                },
            })
            .collect();
        repo.copies().merge_few_locations(many, &renamed).unwrap();
        assert!(!repo.copies().journal_path().exists());
        assert_eq!(
            repo.copies().load_locations().unwrap().records.len(),
            5 + MERGED_FROM_RECORDS + 1
        );
    }

    /// A few records from another replica compare its card with the
    /// log's cards kept in `.dmv/locations.cards`, not with the log read
    /// whole; the kept cards count only while the log ends as it did
    /// when they were taken (rewritten, or the cards file torn, the log
    /// is read again).
    #[test]
    fn a_few_records_compare_cards_with_those_kept_while_the_log_is_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let kept_at = repo.dmv.join("locations.cards");
        let phone = log_of(&[], &[(2, 10, "phone")]).cards;
        repo.copies()
            .merge_locations([Ok(record(1, 1, 1, true))], &phone, false)
            .unwrap();
        assert!(!kept_at.exists());
        repo.copies()
            .merge_few_locations(vec![record(10, 2, 5, true)], &phone)
            .unwrap();
        let log = std::fs::read(repo.copies().locations_path()).unwrap();
        let tail: [u8; 32] = log[log.len() - 32..].try_into().unwrap();
        assert_eq!(
            std::fs::read(&kept_at).unwrap(),
            kept_cards_bytes(&tail, &phone)
        );

        // Kept cards that already name the laptop: its card is no news, the log stands.
        let laptop = log_of(&[], &[(3, 10, "laptop")]).cards;
        let mut both = phone.clone();
        both.extend(laptop.clone());
        std::fs::write(&kept_at, kept_cards_bytes(&tail, &both)).unwrap();
        repo.copies()
            .merge_few_locations(vec![record(11, 3, 5, true)], &laptop)
            .unwrap();
        assert_eq!(std::fs::read(repo.copies().locations_path()).unwrap(), log);
        // Torn, or taken from another log: the log is read, and the laptop is news.
        for kept in [
            kept_cards_bytes(&tail, &both)[..40].to_vec(),
            kept_cards_bytes(&[7; 32], &both),
        ] {
            std::fs::write(&kept_at, kept).unwrap();
            assert_eq!(repo.copies().log_cards_locked().unwrap(), phone);
        }
        repo.copies()
            .merge_few_locations(vec![record(12, 3, 5, true)], &laptop)
            .unwrap();
        let read = repo.copies().load_locations().unwrap();
        assert_eq!(read.cards, both);
        assert_eq!(read.records.len(), 4);
        // The log rewritten: its new cards are read and kept.
        assert_eq!(repo.copies().log_cards_locked().unwrap(), both);
        let log = std::fs::read(repo.copies().locations_path()).unwrap();
        let tail: [u8; 32] = log[log.len() - 32..].try_into().unwrap();
        assert_eq!(
            std::fs::read(&kept_at).unwrap(),
            kept_cards_bytes(&tail, &both)
        );
    }

    /// `.dmv/locations.cards` pinned: the log's last 32 bytes, then the
    /// cards as a version 5 log writes them.
    #[test]
    fn kept_cards_bytes_are_pinned() {
        let cards = log_of(&[], &[(2, 10, "ph")]).cards;
        let mut golden = vec![9u8; 32];
        golden.extend_from_slice(&1u32.to_le_bytes());
        golden.extend_from_slice(&[2; 16]);
        golden.extend_from_slice(&10u64.to_le_bytes());
        golden.extend_from_slice(&[2, b'p', b'h', 0, 0]);
        assert_eq!(kept_cards_bytes(&[9; 32], &cards), golden);
    }

    #[test]
    fn pages_being_sent_are_of_the_log_as_it_was_when_they_began_whatever_is_merged_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let before: Vec<LocationRecord> = (1..=5).map(|k| record(k, 1, 1, true)).collect();
        repo.copies()
            .merge_locations(before.iter().copied().map(Ok), &ReplicaCards::new(), false)
            .unwrap();
        let mut pages = repo.copies().location_pages().unwrap();
        let first = LocationLog::decode(&pages.next_page(2).unwrap().unwrap()).unwrap();
        // Another command merges records in (a fetch, a drop): the log is rewritten under the sender.
        repo.copies()
            .merge_locations(
                [Ok(record(0, 2, 9, true)), Ok(record(3, 1, 9, false))],
                &ReplicaCards::new(),
                false,
            )
            .unwrap();
        let mut sent: Vec<LocationRecord> = first.iter().collect();
        while let Some(page) = pages.next_page(2).unwrap() {
            sent.extend(LocationLog::decode(&page).unwrap().iter());
        }
        assert_eq!(sent, before);
        assert_eq!(repo.copies().load_locations().unwrap().records.len(), 6);
    }

    #[test]
    fn a_damaged_log_is_refused_before_anything_is_written_and_out_of_order_records_too() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let log = log_of(&[record(1, 1, 1, true), record(2, 1, 1, true)], &[]);
        let mut bytes = log.encode();
        bytes[HEADER_LEN + 40] ^= 4;
        std::fs::write(repo.copies().locations_path(), &bytes).unwrap();
        let err = repo
            .copies()
            .merge_locations([Ok(record(3, 1, 1, true))], &ReplicaCards::new(), false)
            .unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        assert_eq!(
            std::fs::read(repo.copies().locations_path()).unwrap(),
            bytes
        );
        assert!(
            repo.copies().check_locations().is_err() && repo.copies().location_pages().is_err()
        );
        // Even a read that keeps none of the records checks them all.
        assert!(repo
            .copies()
            .locations_where(|_| false)
            .unwrap_err()
            .to_string()
            .contains("checksum"));

        std::fs::remove_file(repo.copies().locations_path()).unwrap();
        let err = repo
            .copies()
            .merge_locations(
                [Ok(record(3, 1, 1, true)), Ok(record(2, 1, 1, true))],
                &ReplicaCards::new(),
                false,
            )
            .unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");
        assert!(!repo.copies().locations_path().exists());
        assert_eq!(
            std::fs::read_dir(&repo.dmv)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
                .count(),
            0
        );
    }

    /// `.dmv/locations` is version 5: the header with version 5, one zstd
    /// frame holding the tree claims and version 3's records and cards, and
    /// the checksum of the header and the frame as written; a version 3 log
    /// on disk is still read, and the next merge packs it.
    #[test]
    fn the_log_on_disk_is_packed_and_a_plain_one_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let plain = log_of(
            &[
                record(1, 1, 5, true),
                record(1, 2, 6, true),
                record(2, 1, 7, false),
            ],
            &[(1, 3, "nas")],
        );
        std::fs::write(repo.copies().locations_path(), plain.encode()).unwrap();
        assert_eq!(
            repo.copies().locations_where(|_| true).unwrap().records,
            plain.records
        );
        repo.copies()
            .merge_locations([Ok(record(3, 2, 8, true))], &ReplicaCards::new(), false)
            .unwrap();
        let mut expected = plain.clone();
        expected.record(
            ObjectId([3; 32]),
            ReplicaId([2; 16]),
            Stamp {
                time_ns: 8,
                present: true,
            },
        );
        let on_disk = std::fs::read(repo.copies().locations_path()).unwrap();
        let mut header = b"DMVLOCS\0".to_vec();
        header.extend([5, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(on_disk[..HEADER_LEN], header[..]);
        let (frame, sum) = on_disk[HEADER_LEN..].split_at(on_disk.len() - HEADER_LEN - 32);
        let unpacked = zstd::decode_all(frame).unwrap();
        let as_sent = expected.encode();
        assert_eq!(
            unpacked,
            [&[0, 0, 0, 0], &as_sent[HEADER_LEN..as_sent.len() - 32]].concat(),
            "the frame holds no tree claims (too few records), then version 3's records and cards"
        );
        assert_eq!(
            sum,
            blake3::hash(&on_disk[..on_disk.len() - 32]).as_bytes(),
            "the checksum is of the bytes on disk"
        );
        assert!(on_disk.len() < as_sent.len());
        let read = repo.copies().locations_where(|_| true).unwrap();
        assert_eq!(
            (read.records, read.cards),
            (expected.records.clone(), expected.cards.clone())
        );
        // What is sent stays version 3.
        let sent = repo
            .copies()
            .location_pages()
            .unwrap()
            .next_page(100)
            .unwrap()
            .unwrap();
        assert_eq!(
            LocationLog::decode(&sent).unwrap().records,
            expected.records
        );
        assert_eq!(sent[8], 3);
    }

    /// A packed log damaged anywhere (its frame, its checksum, bytes added
    /// or cut) is refused as damaged, never read wrong nor a panic.
    #[test]
    fn a_damaged_packed_log_is_refused_wherever_the_damage_is() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let records: Vec<LocationRecord> = (0..200u8)
            .map(|k| record(k, k % 3, u64::from(k), k % 5 != 0))
            .collect();
        repo.copies()
            .merge_locations(records.iter().map(|r| Ok(*r)), &ReplicaCards::new(), false)
            .unwrap();
        let good = std::fs::read(repo.copies().locations_path()).unwrap();
        assert_eq!(good[8], 5);
        // Every byte, each at a bit of its own (a flip of an unused bit of
        // the frame's header decoded as if nothing happened).
        let mut damaged: Vec<Vec<u8>> = (0..good.len())
            .map(|at| {
                let mut bytes = good.clone();
                bytes[at] ^= 1 << (at % 8);
                bytes
            })
            .collect();
        damaged.push([&good[..], &[0]].concat());
        damaged.push(good[..good.len() - 1].to_vec());
        damaged.push(good[..HEADER_LEN + 40].to_vec());
        for bytes in damaged {
            std::fs::write(repo.copies().locations_path(), &bytes).unwrap();
            let err = repo.copies().check_locations().unwrap_err();
            assert!(matches!(err, RepoError::Corrupt { .. }), "{err}");
        }
        std::fs::write(repo.copies().locations_path(), &good).unwrap();
        repo.copies().check_locations().unwrap();
    }
}
