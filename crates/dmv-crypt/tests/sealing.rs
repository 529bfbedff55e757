//! Sealed objects through the public API: what is sealed opens to the same
//! bytes, whole or by ranges, and any change to the sealed bytes, or the
//! wrong key or associated data, is an error rather than other bytes.

use std::cell::Cell;
use std::io::Write;
use std::ops::Range;

use dmv_crypt::{
    open, open_segments, seal, Error, Header, Keyring, SealedLayout, SealedReader, Sealer,
    HEADER_LEN, SEALED_SEGMENT_LEN,
};
use dmv_testkit::noise;
use proptest::prelude::*;

fn ring() -> Keyring {
    Keyring::from_epochs(&[(1, [7; 32])]).unwrap()
}

/// Lengths where segments and padding meet, and others.
fn lengths() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![
            0, 1, 2, 7, 8, 9, 100, 65_527, 65_528, 65_529, 65_535, 65_536, 65_537, 67_576, 67_577,
            131_064, 131_072, 131_073, 200_000,
        ]),
        0..200_000usize,
    ]
}

fn segments_of(sealed: &[u8]) -> Vec<Range<usize>> {
    let layout = SealedLayout::new(sealed.len() as u64).unwrap();
    (0..layout.segment_count())
        .map(|i| {
            let r = layout.sealed_range(i..i + 1).unwrap();
            r.start as usize..r.end as usize
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn what_is_sealed_opens_to_the_same_bytes(len in lengths(), seed in any::<u64>()) {
        let data = noise(len, seed);
        let sealed = seal(&ring(), b"name", &data).unwrap();
        let layout = SealedLayout::for_data_len(len as u64).unwrap();
        prop_assert_eq!(sealed.len() as u64, layout.sealed_len());
        prop_assert_eq!(&open(&ring(), b"name", &sealed, len as u64).unwrap(), &data);
        // The budget is judged on the data length, before its buffer.
        if len > 0 {
            let over = open(&ring(), b"name", &sealed, len as u64 - 1).unwrap_err();
            prop_assert!(matches!(over, Error::OverBudget { .. }), "{}", over);
        }
        // A fresh nonce every time: the same bytes never seal the same way.
        prop_assert_ne!(seal(&ring(), b"name", &data).unwrap(), sealed);
    }

    #[test]
    fn any_flipped_bit_is_an_error(len in lengths(), at in any::<prop::sample::Index>(), bit in 0..8u8) {
        let mut sealed = seal(&ring(), b"name", &noise(len, 1)).unwrap();
        let at = at.index(sealed.len());
        sealed[at] ^= 1 << bit;
        prop_assert!(open(&ring(), b"name", &sealed, u64::MAX).is_err(), "byte {} bit {}", at, bit);
    }

    #[test]
    fn a_cut_or_extended_object_is_an_error(
        len in lengths(),
        cut in any::<prop::sample::Index>(),
        extra in prop::collection::vec(any::<u8>(), 1..70_000),
    ) {
        let sealed = seal(&ring(), b"name", &noise(len, 2)).unwrap();
        let cut = cut.index(sealed.len());
        prop_assert!(open(&ring(), b"name", &sealed[..cut], u64::MAX).is_err(), "cut at {}", cut);
        let mut longer = sealed.clone();
        longer.extend_from_slice(&extra);
        prop_assert!(open(&ring(), b"name", &longer, u64::MAX).is_err(), "{} more", extra.len());
    }

    #[test]
    fn wrong_associated_data_or_key_is_an_error(len in lengths()) {
        let sealed = seal(&ring(), b"name", &noise(len, 3)).unwrap();
        let e = open(&ring(), b"other name", &sealed, u64::MAX).unwrap_err();
        prop_assert!(matches!(e, Error::Segment { .. }), "{}", e);
        let other = Keyring::from_epochs(&[(1, [8; 32])]).unwrap();
        let e = open(&other, b"name", &sealed, u64::MAX).unwrap_err();
        prop_assert!(matches!(e, Error::Segment { .. }), "{}", e);
    }

    #[test]
    fn ranges_read_through_the_reader_are_slices_of_the_data(
        len in 1..400_000usize,
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
    ) {
        let data = noise(len, 4);
        let sealed = seal(&ring(), b"name", &data).unwrap();
        let fetch = |r: Range<u64>| Ok(sealed[r.start as usize..r.end as usize].to_vec());
        let keyring = ring();
        let mut reader = SealedReader::new(&keyring, b"name", sealed.len() as u64, fetch).unwrap();
        prop_assert_eq!(reader.data_len(), len as u64);
        let (a, b) = (a.index(len + 1), b.index(len + 1));
        let r = a.min(b)..a.max(b);
        prop_assert_eq!(reader.read(r.start as u64..r.end as u64).unwrap(), &data[r]);
    }
}

#[test]
fn reordered_dropped_or_repeated_segments_are_errors() {
    let data = noise(300_000, 5);
    let sealed = seal(&ring(), b"name", &data).unwrap();
    let segs = segments_of(&sealed);
    assert_eq!(segs.len(), 5);
    let header = &sealed[..HEADER_LEN as usize];
    let rebuild = |order: &[usize]| -> Vec<u8> {
        let mut out = header.to_vec();
        for &i in order {
            out.extend_from_slice(&sealed[segs[i].clone()]);
        }
        out
    };
    assert_eq!(
        open(&ring(), b"name", &rebuild(&[0, 1, 2, 3, 4]), u64::MAX).unwrap(),
        data
    );
    for order in [
        &[1, 0, 2, 3, 4][..],
        &[0, 1, 3, 2, 4],
        &[0, 1, 2, 4],
        &[0, 2, 3, 4],
        &[0, 0, 2, 3, 4],
        &[0, 1, 2, 3],
        &[4],
    ] {
        let e = open(&ring(), b"name", &rebuild(order), u64::MAX).unwrap_err();
        assert!(
            matches!(e, Error::Segment { .. } | Error::NotASealedLength { .. }),
            "{order:?}: {e}"
        );
    }
    // Cut at a segment boundary: the new last segment was not sealed last.
    let mut cut = header.to_vec();
    for seg in &segs[..4] {
        cut.extend_from_slice(&sealed[seg.clone()]);
    }
    let mut cut_layout_ok = header.to_vec();
    cut_layout_ok.extend_from_slice(&sealed[segs[0].clone()]);
    for attempt in [cut, cut_layout_ok] {
        assert!(open(&ring(), b"name", &attempt, u64::MAX).is_err());
    }
    // A segment of another object at the same place.
    let other = seal(&ring(), b"name", &data).unwrap();
    let mut mixed = sealed.clone();
    mixed[segs[2].clone()].copy_from_slice(&other[segs[2].clone()]);
    let e = open(&ring(), b"name", &mixed, u64::MAX).unwrap_err();
    assert_eq!(
        e.to_string(),
        "segment 2 failed authentication: the object was changed or is not the one asked for"
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let sealed = seal(&ring(), b"name", b"hello").unwrap();
    let mut newer = sealed.clone();
    newer[4] = 2;
    let mut epoch7 = sealed.clone();
    epoch7[5] = 7;
    for (bytes, message) in [
        (&b"PK\x03\x04 a zip file"[..], "not an encrypted object"),
        (
            &newer,
            "an encrypted object made by a newer version (format 2)",
        ),
        (&epoch7, "no key of this keyring opens epoch 7"),
        (
            &sealed[..40],
            "40 bytes is not the length of an encrypted object: it was cut short or extended",
        ),
    ] {
        assert_eq!(
            open(&ring(), b"name", bytes, 100).unwrap_err().to_string(),
            message
        );
    }
    assert_eq!(
        open(&ring(), b"name", &sealed, 4).unwrap_err().to_string(),
        "the object holds 5 bytes, over the budget of 4 bytes"
    );
}

#[test]
fn rotation_seals_with_the_newest_epoch_and_opens_every_epoch() {
    let mut keyring = ring();
    let old = seal(&keyring, b"n", b"before").unwrap();
    assert_eq!(keyring.rotate().unwrap(), 2);
    let new = seal(&keyring, b"n", b"after").unwrap();
    assert_eq!(Header::parse(&old).unwrap().epoch(), 1);
    assert_eq!(Header::parse(&new).unwrap().epoch(), 2);
    assert_eq!(open(&keyring, b"n", &old, 10).unwrap(), b"before");
    assert_eq!(open(&keyring, b"n", &new, 10).unwrap(), b"after");
    // The keyring from before the rotation cannot open the new epoch.
    assert_eq!(
        open(&ring(), b"n", &new, 10).unwrap_err().to_string(),
        "no key of this keyring opens epoch 2"
    );
}

#[test]
fn a_range_of_a_large_object_reads_only_the_segments_holding_it() {
    let data = noise(10 << 20, 6);
    let mut sealed = Vec::new();
    let mut sealer = Sealer::new(&ring(), b"big", data.len() as u64, &mut sealed).unwrap();
    for part in data.chunks(100_003) {
        sealer.write_all(part).unwrap();
    }
    sealer.finish().unwrap();
    let layout = SealedLayout::new(sealed.len() as u64).unwrap();
    let fetched = Cell::new(0u64);
    let fetch = |r: Range<u64>| {
        fetched.set(fetched.get() + (r.end - r.start));
        Ok(sealed[r.start as usize..r.end as usize].to_vec())
    };
    let keyring = ring();
    let mut reader = SealedReader::new(&keyring, b"big", sealed.len() as u64, fetch).unwrap();
    // Opening reads the header and the last segment, for the data length.
    let last = layout
        .sealed_range(layout.last_segment()..layout.segment_count())
        .unwrap();
    assert_eq!(fetched.get(), HEADER_LEN + (last.end - last.start));
    for (start, end) in [
        (0u64, 1u64),
        (65_535, 65_537),
        (3_000_000, 3_100_000),
        (5 << 20, (5 << 20) + 65_536),
        ((10 << 20) - 10, 10 << 20),
    ] {
        fetched.set(0);
        let got = reader.read(start..end).unwrap();
        assert_eq!(got, &data[start as usize..end as usize]);
        let covering = end.div_ceil(65_536) - start / 65_536;
        assert!(
            fetched.get() <= covering * SEALED_SEGMENT_LEN,
            "{start}..{end}: fetched {} bytes for {covering} segments",
            fetched.get()
        );
    }
    assert!(reader.read(0..(10 << 20) + 1).is_err());
}

#[test]
fn segments_open_one_by_one_as_a_bucket_would_serve_them() {
    let data = noise(200_000, 7);
    let sealed = seal(&ring(), b"name", &data).unwrap();
    let layout = SealedLayout::new(sealed.len() as u64).unwrap();
    let header = Header::parse(&sealed).unwrap();
    let mut stream = Vec::new();
    for i in 0..layout.segment_count() {
        let r = layout.sealed_range(i..i + 1).unwrap();
        let bytes = &sealed[r.start as usize..r.end as usize];
        let is_last = i == layout.last_segment();
        stream.extend(open_segments(&ring(), b"name", &header, i, bytes, is_last).unwrap());
        // Under another index, or with the last flag wrong, it does not open.
        assert!(open_segments(&ring(), b"name", &header, i + 1, bytes, is_last).is_err());
        assert!(open_segments(&ring(), b"name", &header, i, bytes, !is_last).is_err());
    }
    assert_eq!(stream.len() as u64, layout.stream_len());
    let tail = layout.segment_plain_range(layout.last_segment()).unwrap();
    let len = layout.data_len(&stream[tail.start as usize..]).unwrap();
    assert_eq!(len, 200_000);
    assert_eq!(&stream[..200_000], &data[..]);
    assert!(stream[200_000..stream.len() - 8].iter().all(|&b| b == 0));
    // Bytes that are not whole segments are refused before any is opened.
    let two = layout.sealed_range(0..2).unwrap();
    let some = &sealed[two.start as usize..two.end as usize - 1];
    assert!(matches!(
        open_segments(&ring(), b"name", &header, 0, some, false),
        Err(Error::NotWholeSegments { .. })
    ));
}

#[test]
fn a_reader_refuses_a_storage_that_answers_wrong() {
    let sealed = seal(&ring(), b"name", &noise(150_000, 8)).unwrap();
    let short = |r: Range<u64>| Ok(sealed[r.start as usize..r.end as usize - 1].to_vec());
    assert!(matches!(
        SealedReader::new(&ring(), b"name", sealed.len() as u64, short),
        Err(Error::ShortRead { .. })
    ));
    // Another object's bytes under this one's length.
    let other = seal(&ring(), b"name", &noise(150_000, 9)).unwrap();
    let swap = Cell::new(false);
    let mixed = |r: Range<u64>| {
        let from = if swap.get() { &other } else { &sealed };
        Ok(from[r.start as usize..r.end as usize].to_vec())
    };
    let keyring = ring();
    let mut reader = SealedReader::new(&keyring, b"name", sealed.len() as u64, mixed).unwrap();
    swap.set(true);
    assert!(matches!(
        reader.read(0..10),
        Err(Error::Segment { index: 0 })
    ));
    let failing = |_: Range<u64>| Err(std::io::Error::other("connection reset"));
    assert_eq!(
        SealedReader::new(&ring(), b"name", sealed.len() as u64, failing)
            .err()
            .unwrap()
            .to_string(),
        "connection reset"
    );
}
