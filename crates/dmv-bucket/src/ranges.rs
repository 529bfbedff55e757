//! Which byte ranges of which packs to GET for a set of objects: records
//! close together in one pack share one request, so a clone reads packs in
//! a few large ranges and a partial fetch reads only what it needs.

use dmv_store::{Located, ObjectId, PackEntry};

/// One ranged GET and the records it covers (in pack order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRange {
    pub pack: ObjectId,
    pub start: u64,
    pub end: u64,
    pub entries: Vec<PackEntry>,
}

/// Groups records into ranges: a gap of up to `max_gap` bytes between two
/// records is read through rather than paid for with another request; no
/// range grows past `max_len` unless a single record is larger.
pub fn plan(mut wanted: Vec<Located>, max_gap: u64, max_len: u64) -> Vec<ReadRange> {
    wanted.sort_by_key(|a| (a.pack, a.entry.offset));
    // Duplicates by id only: two ids an index puts at one offset both get read,
    // and the record header check then refuses the one that is not there.
    let mut seen = std::collections::HashSet::new();
    wanted.retain(|loc| seen.insert(loc.entry.id));
    let mut out: Vec<ReadRange> = Vec::new();
    for loc in wanted {
        let start = loc.entry.offset;
        let end = start + loc.entry.record_len() as u64;
        if let Some(last) = out.last_mut() {
            let next_to_last =
                last.pack == loc.pack && start >= last.end && start - last.end <= max_gap;
            if next_to_last && end - last.start <= max_len {
                last.end = end;
                last.entries.push(loc.entry);
                continue;
            }
        }
        out.push(ReadRange {
            pack: loc.pack,
            start,
            end,
            entries: vec![loc.entry],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmv_store::ObjectKind;
    use proptest::prelude::*;

    fn located(pack: u8, offset: u64, stored_len: u32) -> Located {
        let mut id = [pack; 32];
        id[..8].copy_from_slice(&offset.to_le_bytes());
        let entry = PackEntry {
            id: ObjectId(id),
            kind: ObjectKind::Chunk,
            compression: 0,
            offset,
            raw_len: stored_len,
            stored_len,
        };
        Located {
            pack: ObjectId([pack; 32]),
            entry,
        }
    }

    #[test]
    fn neighbours_share_a_request_and_packs_never_mix() {
        let rec = dmv_store::RECORD_HEADER_LEN as u64;
        let a = located(1, 16, 100);
        let b = located(1, 16 + rec + 100, 50); // right after a
        let c = located(1, 10_000_000, 10); // far away
        let d = located(2, 16, 10); // another pack
        let plan = plan(vec![d, c, b, a], 1024, 1 << 20);
        assert_eq!(plan.len(), 3);
        assert_eq!(
            (plan[0].start, plan[0].end, plan[0].entries.len()),
            (16, 16 + 2 * rec + 150, 2)
        );
        assert_eq!(plan[1].entries[0].offset, 10_000_000);
        assert_eq!(plan[2].pack, ObjectId([2; 32]));
    }

    #[test]
    fn two_ids_at_one_offset_are_both_read() {
        // An index that lies: both get planned, and the header check refuses the false one.
        let mut a = located(1, 16, 10);
        let mut b = located(1, 16, 10);
        a.entry.id = ObjectId([1; 32]);
        b.entry.id = ObjectId([2; 32]);
        let plan = plan(vec![a, b, a], 0, 1 << 20);
        let ids: Vec<ObjectId> = plan
            .iter()
            .flat_map(|r| r.entries.iter().map(|e| e.id))
            .collect();
        assert_eq!(ids.len(), 2);
        assert!(ids.contains(&a.entry.id) && ids.contains(&b.entry.id));
    }

    proptest! {
        #[test]
        fn every_record_is_inside_exactly_one_range(offsets in proptest::collection::btree_set(0u64..1_000_000, 1..60), gap in 0u64..5000, max_len in 1u64..200_000, packs in proptest::collection::vec(1u8..4, 60), repeats in proptest::collection::vec(0usize..3, 60)) {
            // Records of 100 bytes at distinct offsets 200 apart at least (no overlap),
            // spread over up to three packs; some asked for more than once.
            let wanted: Vec<Located> = offsets.iter().zip(&packs).map(|(o, p)| located(*p, o * 200, 100 - dmv_store::RECORD_HEADER_LEN as u32)).collect();
            let mut asked = Vec::new();
            for (loc, n) in wanted.iter().zip(&repeats) {
                for _ in 0..=*n {
                    asked.push(*loc);
                }
            }
            asked.reverse();
            let ranges = plan(asked, gap, max_len);
            let mut covered = 0;
            // (pack, id) of every planned record: each exactly once.
            let mut planned = std::collections::BTreeSet::new();
            for r in &ranges {
                prop_assert!(r.end - r.start <= max_len.max(100));
                for e in &r.entries {
                    prop_assert!(e.offset >= r.start && e.offset + e.record_len() as u64 <= r.end);
                    covered += 1;
                    prop_assert!(planned.insert((r.pack, e.id)), "{} planned twice", e.id);
                }
                // In pack order, and the range starts and ends with its records.
                prop_assert!(r.entries.windows(2).all(|w| w[0].offset < w[1].offset));
                prop_assert_eq!(r.start, r.entries[0].offset);
                let last = r.entries.last().unwrap();
                prop_assert_eq!(r.end, last.offset + last.record_len() as u64);
            }
            prop_assert_eq!(covered, wanted.len());
            let want: std::collections::BTreeSet<(ObjectId, ObjectId)> = wanted.iter().map(|l| (l.pack, l.entry.id)).collect();
            prop_assert_eq!(&planned, &want);
            // Ranges of one pack never overlap, so no record's bytes are read twice.
            for (i, a) in ranges.iter().enumerate() {
                for b in &ranges[i + 1..] {
                    prop_assert!(a.pack != b.pack || a.end <= b.start || b.end <= a.start, "{:?} overlaps {:?}", (a.start, a.end), (b.start, b.end));
                }
            }
            // Each wanted record lies in exactly one range of its pack.
            for l in &wanted {
                let end = l.entry.offset + l.entry.record_len() as u64;
                let n = ranges.iter().filter(|r| r.pack == l.pack && r.start <= l.entry.offset && end <= r.end).count();
                prop_assert_eq!(n, 1);
            }
        }
    }
}
