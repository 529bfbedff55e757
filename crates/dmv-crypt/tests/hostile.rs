//! Whatever bytes the storage hands back, reading them is an answer or an
//! error, never a panic, and never an allocation sized by what they claim.

use std::ops::Range;

use dmv_crypt::{
    open, open_segments, seal, unwrap_with_identity, unwrap_with_passphrase, wrap_for, wrap_kind,
    wrap_with_passphrase, Header, Identity, Keyring, PassphraseCost, Recipient, SealedLayout,
    SealedReader,
};
use proptest::prelude::*;

const CHEAP: PassphraseCost = PassphraseCost {
    memory_kib: 64,
    iterations: 1,
    lanes: 1,
};

fn ring() -> Keyring {
    Keyring::from_epochs(&[(1, [7; 32]), (2, [8; 32])]).unwrap()
}

/// Valid encodings of each format, to mutate: arbitrary bytes rarely get
/// past a magic number.
fn samples() -> Vec<Vec<u8>> {
    vec![
        ring().encode().to_vec(),
        seal(&ring(), b"n", b"").unwrap(),
        seal(&ring(), b"n", &[5; 70_000]).unwrap(),
        wrap_for(&phone().recipient(), &ring()).unwrap(),
        wrap_with_passphrase(b"pw", &ring(), &CHEAP).unwrap(),
    ]
}

fn phone() -> Identity {
    Identity::parse(&format!("DMV-SECRET-KEY-1{}", "5A".repeat(32))).unwrap()
}

/// Runs every reader over `bytes`; each may fail, none may panic.
fn read_all_ways(bytes: &[u8]) {
    let keyring = ring();
    let _ = Keyring::decode(bytes, 8);
    let _ = Header::parse(bytes);
    let _ = SealedLayout::new(bytes.len() as u64);
    let _ = open(&keyring, b"n", bytes, 1 << 20);
    let _ = wrap_kind(bytes);
    let _ = unwrap_with_identity(&phone(), bytes, 8);
    let _ = unwrap_with_passphrase(b"pw", bytes, &CHEAP, 8);
    if let Ok(header) = Header::parse(bytes) {
        let rest = bytes.get(25..).unwrap_or_default();
        for first in [0, 1, u64::MAX] {
            for last in [false, true] {
                let _ = open_segments(&keyring, b"n", &header, first, rest, last);
            }
        }
    }
    let fetch = |r: Range<u64>| {
        Ok(bytes
            .get(r.start as usize..r.end as usize)
            .unwrap_or_default()
            .to_vec())
    };
    if let Ok(mut reader) = SealedReader::new(&keyring, b"n", bytes.len() as u64, fetch) {
        let len = reader.data_len();
        let _ = reader.read(0..len);
        let _ = reader.read(len / 2..len + 1);
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = Identity::parse(text);
        let _ = Recipient::parse(text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        read_all_ways(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_a_magic_never_panic(
        magic in prop::sample::select(vec![&b"DMVK\x01"[..], b"DMVE\x01", b"DMVW\x01\x01", b"DMVW\x01\x02"]),
        rest in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut bytes = magic.to_vec();
        bytes.extend(rest);
        read_all_ways(&bytes);
    }

    #[test]
    fn mutated_encodings_never_panic(
        which in 0..5usize,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let mut bytes = samples().swap_remove(which);
        for (at, value) in edits {
            let at = at.index(bytes.len());
            bytes[at] = value;
        }
        if do_cut {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        read_all_ways(&bytes);
    }

    #[test]
    fn any_sealed_length_is_judged_without_panic(len in any::<u64>()) {
        if let Ok(layout) = SealedLayout::new(len) {
            prop_assert_eq!(layout.sealed_len(), len);
            let last = layout.last_segment();
            prop_assert!(layout.segment_plain_range(last).is_some());
            prop_assert!(layout.sealed_range(0..layout.segment_count()).is_some());
        }
        let _ = SealedLayout::for_data_len(len);
    }
}

#[test]
fn a_huge_declared_keyring_is_refused_before_anything_is_sized() {
    let mut bytes = b"DMVK\x01".to_vec();
    bytes.extend(u32::MAX.to_le_bytes());
    assert!(Keyring::decode(&bytes, u32::MAX).is_err());
}
