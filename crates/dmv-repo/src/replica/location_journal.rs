//! `.dmv/locations.journal`: location records appended since the location
//! log was last rewritten. A `get` of one file, or a drop, learns a record
//! or two; rewriting the whole log for them (two records per file: 11 MB at
//! 100,000 files, read, hashed, written twice and synced) was most of what a
//! `get` of one file cost. They are appended here instead, and folded into
//! the log by the next merge that rewrites it anyway, or once
//! [`JOURNAL_LIMIT`] records pile up. Readers take the log and the journal
//! together (per key and replica the newest record wins, so a record in
//! both, after a fold cut short, counts once).
//!
//! Format: magic `DMVLJRNL`, version u32, then frames, each appended whole
//! and synced before the command goes on: record count u32, the count's
//! complement u32, the records (as in the log, in any order), and a BLAKE3
//! checksum of all that. A last frame that ends short of its length is an
//! append a crash interrupted, never acknowledged: it is left out (and cut
//! off by the next append). A frame whose count disagrees with its
//! complement or whose bytes fail the checksum is damage, wherever it is
//! (a flipped count could otherwise pass for a frame cut short).

use crate::replica::locations::{BadLocationLog, LocationRecord, RECORD_LEN};

pub(crate) const JOURNAL_MAGIC: &[u8; 8] = b"DMVLJRNL";
pub(crate) const JOURNAL_VERSION: u32 = 1;
pub(crate) const JOURNAL_HEADER_LEN: usize = 8 + 4;
/// A frame's count and its complement.
pub(crate) const FRAME_HEADER_LEN: usize = 4 + 4;
/// Records the journal holds before they are folded into the log: readers
/// hold them in memory (~230 KB), and the log is rewritten at most once per
/// this many records learnt a few at a time.
pub(crate) const JOURNAL_LIMIT: usize = 4096;

/// The records of a journal, sorted by key and replica, each once (the newest).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Journal {
    pub records: Vec<LocationRecord>,
    /// The records the whole frames hold, repeats included.
    pub appended: usize,
    /// Where the whole frames end: the next append goes there.
    pub valid_len: usize,
}

/// The bytes that start a new journal.
pub(crate) fn journal_header() -> Vec<u8> {
    let mut out = JOURNAL_MAGIC.to_vec();
    out.extend_from_slice(&JOURNAL_VERSION.to_le_bytes());
    out
}

/// One frame holding `records`.
pub(crate) fn journal_frame(records: &[LocationRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + records.len() * RECORD_LEN + 32);
    out.extend_from_slice(&(records.len() as u32).to_le_bytes());
    out.extend_from_slice(&(!(records.len() as u32)).to_le_bytes());
    for r in records {
        out.extend_from_slice(&r.encode());
    }
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    out
}

/// Reads a journal's bytes (empty: none yet).
pub(crate) fn parse_journal(bytes: &[u8]) -> Result<Journal, BadLocationLog> {
    let bad = |d: &str| BadLocationLog(format!("not a valid location journal: {d}"));
    // Shorter than a header: its creation was cut short, nothing was appended.
    if bytes.len() < JOURNAL_HEADER_LEN {
        return Ok(Journal::default());
    }
    if &bytes[..8] != JOURNAL_MAGIC {
        return Err(bad("no journal header"));
    }
    if bytes[8..12] != JOURNAL_VERSION.to_le_bytes() {
        return Err(bad("unknown version"));
    }
    let mut records = Vec::new();
    let mut at = JOURNAL_HEADER_LEN;
    while bytes.len() - at >= FRAME_HEADER_LEN {
        let word =
            |i: usize| u32::from_le_bytes(bytes[at + i..at + i + 4].try_into().unwrap_or_default());
        let count = word(0);
        if word(4) != !count {
            return Err(bad("a frame's record count is damaged"));
        }
        let end = (count as usize)
            .checked_mul(RECORD_LEN)
            .and_then(|n| n.checked_add(at + FRAME_HEADER_LEN + 32));
        let Some(end) = end.filter(|end| *end <= bytes.len()) else {
            break;
        };
        let (body, sum) = bytes[at..end].split_at(end - at - 32);
        if blake3::hash(body).as_bytes() != sum {
            return Err(bad("a frame does not match its checksum"));
        }
        for record in body[FRAME_HEADER_LEN..].chunks_exact(RECORD_LEN) {
            records.push(
                LocationRecord::decode(record.try_into().map_err(|_| bad("short record"))?)
                    .map_err(|e| bad(&e.0))?,
            );
        }
        at = end;
    }
    let appended = records.len();
    // Sorted, and of repeats the newest (absent at equal times), as a merge keeps.
    records.sort_by_key(LocationRecord::order_then_age);
    let mut newest: Vec<LocationRecord> = Vec::with_capacity(records.len());
    for r in records {
        match newest.last_mut() {
            Some(last) if last.order() == r.order() => *last = r,
            _ => newest.push(r),
        }
    }
    Ok(Journal {
        records: newest,
        appended,
        valid_len: at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica::locations::{ReplicaId, Stamp};
    use dmv_store::ObjectId;
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

    #[test]
    fn the_encoding_is_pinned() {
        let mut bytes = journal_header();
        bytes.extend(journal_frame(&[record(1, 2, 3, true)]));
        let mut want = b"DMVLJRNL\x01\0\0\0\x01\0\0\0\xfe\xff\xff\xff".to_vec();
        want.extend([1u8; 32]);
        want.extend([2u8; 16]);
        want.extend(3u64.to_le_bytes());
        want.push(1);
        want.extend(blake3::hash(&want[12..]).as_bytes());
        assert_eq!(bytes, want);
        assert_eq!(
            hex(&bytes[bytes.len() - 32..]),
            "109b04fb12c353fc1790dfb653e16b5a1d80f00db6e9d65aa20b821c084c6499"
        );
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn records_come_sorted_and_the_newest_of_repeats_wins_absent_at_a_tie() {
        let mut bytes = journal_header();
        bytes.extend(journal_frame(&[
            record(2, 1, 5, true),
            record(1, 1, 5, true),
        ]));
        bytes.extend(journal_frame(&[
            record(2, 1, 4, false),
            record(1, 1, 5, false),
            record(1, 2, 1, true),
        ]));
        let j = parse_journal(&bytes).unwrap();
        assert_eq!(
            j.records,
            vec![
                record(1, 1, 5, false),
                record(1, 2, 1, true),
                record(2, 1, 5, true)
            ]
        );
        assert_eq!((j.appended, j.valid_len), (5, bytes.len()));
    }

    #[test]
    fn an_append_cut_short_is_left_out_and_a_damaged_frame_before_others_is_damage() {
        let mut bytes = journal_header();
        bytes.extend(journal_frame(&[record(1, 1, 1, true)]));
        let whole = bytes.len();
        bytes.extend(journal_frame(&[
            record(2, 1, 1, true),
            record(3, 1, 1, true),
        ]));
        for cut in whole..bytes.len() {
            let j = parse_journal(&bytes[..cut]).unwrap();
            assert_eq!(
                (j.records, j.valid_len),
                (vec![record(1, 1, 1, true)], whole),
                "cut at {cut}"
            );
        }
        // A flipped bit is damage wherever it is, the last frame's count included.
        for at in JOURNAL_HEADER_LEN..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1;
            assert!(parse_journal(&flipped).is_err(), "a flip at {at} passed");
        }
        assert!(parse_journal(b"DMVLJRNX\x01\0\0\0").is_err());
        assert_eq!(parse_journal(b"DMVLJ").unwrap(), Journal::default());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), with_header in any::<bool>()) {
            let mut input = if with_header { journal_header() } else { Vec::new() };
            input.extend(bytes);
            if let Ok(j) = parse_journal(&input) {
                prop_assert!(j.valid_len <= input.len());
                prop_assert!(j.records.windows(2).all(|w| w[0].order() < w[1].order()));
            }
        }
    }
}
