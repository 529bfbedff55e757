//! The table's tests: round trips, and the readers and the verifier fed
//! flipped, mutated and made-up bytes, which must fail cleanly and never
//! panic. In a file of their own, as they exercise the writer, the reader
//! and the verifier together.

use std::path::Path;

use proptest::prelude::*;

use crate::block::*;
use crate::format::*;
use crate::table::Table;
use crate::verify::check_record;
use crate::writer::TableWriter;
use crate::RefError;

fn write_table(dir: &Path, recs: &[(Vec<u8>, u8, Vec<u8>)]) -> Vec<u8> {
    let p = dir.join("t.ref");
    let _ = std::fs::remove_file(&p);
    let mut w = TableWriter::create(&p, "").unwrap();
    for (k, t, v) in recs {
        w.add(k, *t, v).unwrap();
    }
    w.finish(1, 1).unwrap();
    std::fs::read(&p).unwrap()
}

fn ref_recs(n: usize) -> Vec<(Vec<u8>, u8, Vec<u8>)> {
    let mut v: Vec<_> = (0..n)
        .map(|i| {
            let mut k = Vec::new();
            ref_key(&format!("refs/heads/branch-{i:07}"), &mut k);
            let val = if i % 7 == 0 {
                (T_DELETE, vec![])
            } else {
                (T_REF, vec![(i % 251) as u8; 32])
            };
            (k, val.0, val.1)
        })
        .collect();
    v.sort();
    v
}

/// Exercises every read path; must never panic whatever the bytes.
fn poke(bytes: Vec<u8>) -> Result<usize, RefError> {
    let t = Table::from_bytes(Path::new("fuzz.ref"), bytes)?;
    let _ = t.verify();
    let _ = t.get(b"rrefs/heads/branch-0000005");
    let _ = t.get(b"");
    let mut it = t.seek(b"")?;
    let mut n = 0;
    while let Some((k, ty, v)) = it.current() {
        let _ = check_record(k, ty, v);
        n += 1;
        it.advance()?;
        if n > 1_000_000 {
            break;
        }
    }
    Ok(n)
}

/// xorshift, so a proptest seed or a loop index drives a whole case.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    /// Up to `max - 1` random bytes.
    fn bytes(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max);
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A block around `records` with a correct length and checksum, so
/// `read_block` accepts it and the record decoder sees the contents.
fn seal_block(kind: u8, records: &[u8], restarts: &[u32]) -> Vec<u8> {
    let mut b = vec![kind, 0, 0, 0, 0];
    b.extend_from_slice(records);
    for r in restarts {
        b.extend_from_slice(&r.to_be_bytes());
    }
    b.extend_from_slice(&(restarts.len() as u32).to_be_bytes());
    let total = (b.len() + BLOCK_CHECK) as u32;
    b[1..5].copy_from_slice(&total.to_be_bytes());
    let c = block_check(&b);
    b.extend_from_slice(&c);
    b
}

/// Records that look nearly right (varint lengths, a value type, a
/// key, a value), with lies and random bytes mixed in; index blocks
/// point at `children`. Returns the bytes and the restart points.
fn garbage_records(r: &mut Rng, kind: u8, children: &[u64]) -> (Vec<u8>, Vec<u32>) {
    let mut body = Vec::new();
    let mut restarts = Vec::new();
    let mut prev_len = 0usize;
    for i in 0..1 + r.below(12) {
        let at = (BLOCK_HEADER + body.len()) as u32;
        let restart = i == 0 || r.chance(4);
        if restart {
            restarts.push(at);
        }
        let mut key = Vec::new();
        let name = ["refs/heads/main", "a", "a/b", "x..y", "t/1", ""][r.below(6) as usize];
        match r.below(4) {
            0 => ref_key(name, &mut key),
            1 => log_key(name, r.below(5), &mut key),
            2 => key = r.bytes(12),
            _ => {
                ref_key(name, &mut key);
                key.extend(r.bytes(4));
            }
        }
        let shared = (if restart && !r.chance(16) {
            0
        } else {
            r.below(prev_len as u64 + 2) as usize
        })
        .min(key.len());
        let vtype = if kind == KIND_INDEX && !r.chance(8) {
            T_INDEX
        } else {
            r.below(6) as u8
        };
        let mut val = Vec::new();
        match vtype {
            T_INDEX => put_varint(
                &mut val,
                if children.is_empty() || r.chance(8) {
                    r.next() >> r.below(64)
                } else {
                    children[r.below(children.len() as u64) as usize]
                },
            ),
            T_REF if !r.chance(4) => val = (0..32).map(|_| r.next() as u8).collect(),
            T_LOG if !r.chance(4) => {
                let v: Vec<u8> = (0..32).map(|_| r.next() as u8).collect();
                encode_log(
                    &mut val,
                    r.chance(2).then_some(&[7; 32]),
                    Some(&v.try_into().unwrap()),
                    r.next() as i64,
                    r.next() as i16,
                    "W <w@x>",
                    "msg",
                );
            }
            _ => val = r.bytes(40),
        }
        let lie = |r: &mut Rng, n: usize| {
            if r.chance(10) {
                r.next() >> r.below(64)
            } else {
                n as u64
            }
        };
        put_varint(&mut body, shared as u64);
        put_varint(&mut body, lie(r, key.len() - shared));
        body.push(vtype);
        put_varint(&mut body, lie(r, val.len()));
        body.extend_from_slice(&key[shared..]);
        body.extend_from_slice(&val);
        prev_len = key.len();
    }
    if r.chance(3) {
        for _ in 0..1 + r.below(4) {
            let i = r.below(body.len() as u64) as usize;
            body[i] = r.next() as u8;
        }
    }
    (body, restarts)
}

/// A whole table of sealed garbage blocks with a correct footer and file
/// checksum. Also returns each block's offset and whether its restart
/// points are well formed (then `read_block` must accept it).
fn sealed_garbage_table(seed: u64) -> (Vec<u8>, Vec<(u64, bool)>) {
    let mut r = Rng::new(seed);
    let mut b = MAGIC.to_vec();
    let mut blocks = Vec::new();
    let mut data_offsets = Vec::new();
    // Half the tables have well-formed data blocks and true record
    // counts, so verify gets past the data into the garbage index.
    let clean_data = r.chance(2);
    let mut refs = 0;
    for blk in 0..r.below(4) {
        data_offsets.push(b.len() as u64);
        blocks.push((b.len() as u64, true));
        if clean_data {
            let mut bb = BlockBuilder::new(KIND_DATA);
            for i in 0..1 + r.below(40) {
                let mut k = Vec::new();
                ref_key(&format!("refs/heads/b{blk}-{i:03}"), &mut k);
                bb.add(&k, T_REF, &[i as u8; 32]);
                refs += 1;
            }
            bb.seal().unwrap();
            b.extend_from_slice(&bb.buf);
        } else {
            let (recs, restarts) = garbage_records(&mut r, KIND_DATA, &[]);
            b.extend(seal_block(KIND_DATA, &recs, &restarts));
        }
    }
    let data_end = b.len() as u64;
    let mut root = 0;
    if !data_offsets.is_empty() {
        let mut children = data_offsets.clone();
        for _ in 0..1 + r.below(3) {
            let (recs, mut restarts) = garbage_records(&mut r, KIND_INDEX, &children);
            let mut ok = true;
            if r.chance(10) {
                restarts = (0..r.below(4))
                    .map(|_| r.next() as u32 >> r.below(32))
                    .collect();
                ok = false;
            }
            root = b.len() as u64;
            children.push(root);
            blocks.push((root, ok));
            b.extend(seal_block(KIND_INDEX, &recs, &restarts));
        }
    }
    let mut f = FOOTER_MAGIC.to_vec();
    let (refs, logs) = if clean_data {
        (refs, 0)
    } else {
        (r.below(20), r.below(20))
    };
    for v in [data_end, root, refs, logs, 1, 1] {
        f.extend_from_slice(&v.to_be_bytes());
    }
    let c = block_check(&f);
    f.extend_from_slice(&c);
    b.extend_from_slice(&f);
    let sum = blake3::hash(&b);
    b.extend_from_slice(sum.as_bytes());
    (b, blocks)
}

/// Loads a sealed garbage table and runs every reader over it. The
/// frame is right, so it must load, each well-formed block must pass
/// `read_block`, and no check may fail on a checksum: whatever fails,
/// fails in the decoder. Returns verify's outcome.
fn poke_sealed(bytes: Vec<u8>, blocks: &[(u64, bool)]) -> Result<(), String> {
    let t = Table::from_bytes(Path::new("fuzz.ref"), bytes.clone())
        .expect("a correct footer must load");
    for &(off, ok) in blocks {
        match t.read_block(off) {
            Ok(b) => assert!(b.records_end >= BLOCK_HEADER),
            Err(e) => {
                assert!(!ok, "block at {off} must pass its checks: {e}");
                assert!(e.to_string().contains("restart"), "{e}");
            }
        }
    }
    let verified = t.verify().map_err(|e| e.to_string());
    if let Err(e) = &verified {
        assert!(
            !e.ends_with(": checksum mismatch"),
            "file checksum is correct: {e}"
        );
    }
    let _ = poke(bytes);
    verified
}

/// The sealed garbage really reaches the record decoder: over many
/// tables, verify fails in record decoding and record checks, not only
/// in the framing, and some tables even pass.
#[test]
fn sealed_garbage_reaches_the_record_decoder() {
    let mut reasons = std::collections::BTreeMap::<String, usize>::new();
    for seed in 0..3000 {
        let (bytes, blocks) = sealed_garbage_table(seed);
        let reason = match poke_sealed(bytes, &blocks) {
            Ok(()) => "ok".to_string(),
            Err(e) => {
                let reason = e.rsplit("is corrupt: ").next().unwrap();
                reason
                    .split(" (block")
                    .next()
                    .unwrap()
                    .split(" at offset")
                    .next()
                    .unwrap()
                    .to_string()
            }
        };
        *reasons.entry(reason).or_default() += 1;
    }
    eprintln!("{reasons:#?}");
    let has = |r: &str| reasons.keys().any(|k| k.contains(r));
    for r in [
        "record runs past the end of its block",
        "prefix length exceeds previous key",
        "invalid ref name in table",
        "keys out of order",
        "record counts disagree with the footer",
        "index does not match the data blocks",
        "index block holds a non-index record",
    ] {
        assert!(has(r), "no table failed with {r:?}: {reasons:?}");
    }
    let decoder: usize = reasons
        .iter()
        .filter(|(k, _)| !k.contains("restart") && *k != "ok")
        .map(|x| x.1)
        .sum();
    assert!(decoder > 1000, "{reasons:?}");
}

#[test]
fn round_trip_and_seek() {
    let d = tempfile::tempdir().unwrap();
    let recs = ref_recs(20_000);
    let bytes = write_table(d.path(), &recs);
    let t = Table::from_bytes(Path::new("x"), bytes).unwrap();
    t.verify().unwrap();
    assert_eq!(
        poke(std::fs::read(d.path().join("t.ref")).unwrap()).unwrap(),
        recs.len()
    );
    for (i, (k, ty, v)) in recs.iter().enumerate().step_by(97) {
        assert_eq!(t.get(k).unwrap(), Some((*ty, v.clone())), "{i}");
        let mut missing = k.clone();
        missing.push(b'!');
        assert_eq!(t.get(&missing).unwrap(), None);
        let it = t.seek(&missing).unwrap();
        assert_eq!(
            it.current().map(|c| c.0.to_vec()),
            recs.get(i + 1).map(|r| r.0.clone())
        );
    }
    assert!(t.seek(b"s").unwrap().current().is_none());
}

#[test]
fn empty_table() {
    let d = tempfile::tempdir().unwrap();
    let bytes = write_table(d.path(), &[]);
    assert_eq!(poke(bytes).unwrap(), 0);
}

#[test]
fn every_flipped_byte_is_detected() {
    let d = tempfile::tempdir().unwrap();
    let bytes = write_table(d.path(), &ref_recs(300));
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x40;
        let res = Table::from_bytes(Path::new("x.ref"), b).and_then(|t| t.verify());
        let e = res.expect_err(&format!("flip at {i} undetected"));
        assert!(e.to_string().contains("x.ref"), "{e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = poke(bytes);
    }

    #[test]
    fn arbitrary_bytes_with_valid_frame_never_panic(mid in proptest::collection::vec(any::<u8>(), 0..600), root in any::<u64>(), de in 0u64..700, seed in any::<u64>()) {
        // A frame with valid magics and footer checksum gets the parser
        // past the cheap checks into block and index decoding.
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&mid);
        let mut f = FOOTER_MAGIC.to_vec();
        for v in [de.min(8 + mid.len() as u64), root % (8 + mid.len() as u64 + 1), 0, 0, 1, 1] {
            f.extend_from_slice(&v.to_be_bytes());
        }
        let c = block_check(&f);
        f.extend_from_slice(&c);
        b.extend_from_slice(&f);
        b.extend_from_slice(&[0; 32]);
        let _ = poke(b);
        // Random blocks never pass their checksums: also blocks of
        // garbage records sealed with correct checksums, footer and
        // file checksum, so the decoder itself gets the garbage.
        let (bytes, blocks) = sealed_garbage_table(seed);
        let _ = poke_sealed(bytes, &blocks);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn mutated_valid_table_never_panics(
        muts in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let base = BYTES.get_or_init(|| {
            let d = tempfile::tempdir().unwrap();
            write_table(d.path(), &ref_recs(2000))
        });
        let mut b = base.clone();
        for (i, v) in &muts {
            let i = i.index(b.len());
            b[i] = *v;
        }
        if truncate {
            b.truncate(cut.index(b.len()));
        }
        let changed = &b != base;
        let t = Table::from_bytes(Path::new("m.ref"), b.clone());
        let _ = poke(b);
        if changed {
            prop_assert!(t.and_then(|t| t.verify()).is_err());
        }

        // The same mutations inside block bodies, then every block
        // checksum and the file checksum recomputed: the checks pass
        // and the decoder reads the mutated records.
        let mut blocks = Vec::new();
        let index_end = base.len() - FOOTER_LEN as usize;
        let mut off = HEADER_LEN as usize;
        while off < index_end {
            let len = u32::from_be_bytes(base[off + 1..off + 5].try_into().unwrap()) as usize;
            blocks.push((off, len));
            off += len;
        }
        prop_assert_eq!(off, index_end);
        let mut b = base.clone();
        for (i, v) in &muts {
            let (off, len) = blocks[i.index(blocks.len())];
            let body = off + BLOCK_HEADER..off + len - BLOCK_CHECK;
            b[body.start + (i.index(body.len()) + *v as usize) % body.len()] = *v;
        }
        for &(off, len) in &blocks {
            let c = block_check(&b[off..off + len - BLOCK_CHECK]);
            b[off + len - BLOCK_CHECK..off + len].copy_from_slice(&c);
        }
        let n = b.len();
        let sum = blake3::hash(&b[..n - 32]);
        b[n - 32..].copy_from_slice(sum.as_bytes());
        let t = Table::from_bytes(Path::new("m.ref"), b.clone()).expect("the footer is untouched");
        for &(off, _) in &blocks {
            if let Err(e) = t.read_block(off as u64) {
                // Only a mutated restart table can stop a resealed block.
                prop_assert!(e.to_string().contains("restart"), "{}", e);
            }
        }
        if let Err(e) = t.verify() {
            prop_assert!(!e.to_string().contains("checksum mismatch"), "{}", e);
        }
        let _ = poke(b);
    }
}
