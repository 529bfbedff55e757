//! Properties that need a fixed nonce (private): the streaming sealer
//! writes exactly what `seal` writes, however the bytes are split into
//! writes; and the types holding keys wipe them when dropped.

use std::io::Write;

use proptest::prelude::*;

use crate::golden::{counting, nonce, ring1, ring2};
use crate::identity::Identity;
use crate::stream::{seal_with_nonce, Sealer};

/// Lengths where segments and padding meet, and others.
fn lengths() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![
            0, 1, 7, 8, 9, 65_527, 65_528, 65_529, 65_535, 65_536, 65_537, 67_576, 67_577, 131_064,
            131_072, 131_073, 196_600,
        ]),
        0..200_000usize,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn streaming_sealer_writes_what_seal_writes(
        len in lengths(),
        cuts in prop::collection::vec(1..70_000usize, 0..6),
        two_epochs in any::<bool>(),
    ) {
        let ring = if two_epochs { ring2() } else { ring1() };
        let data = counting(len as u8, len);
        let whole = seal_with_nonce(&ring, b"name", &data, nonce()).unwrap();
        let mut sealer = Sealer::with_nonce(&ring, b"name", len as u64, Vec::new(), nonce()).unwrap();
        prop_assert_eq!(sealer.sealed_len(), whole.len() as u64);
        let mut rest = &data[..];
        for cut in cuts {
            let (now, later) = rest.split_at(cut.min(rest.len()));
            sealer.write_all(now).unwrap();
            rest = later;
        }
        sealer.write_all(rest).unwrap();
        prop_assert_eq!(sealer.finish().unwrap(), whole);
    }
}

#[test]
fn sealer_refuses_more_or_fewer_bytes_than_declared() {
    let mut s = Sealer::with_nonce(&ring1(), b"", 3, Vec::new(), nonce()).unwrap();
    assert!(s.write_all(b"four").is_err());
    s.write_all(b"ab").unwrap();
    assert_eq!(
        s.finish().unwrap_err().to_string(),
        "2 bytes written of the 3 declared"
    );
}

#[test]
fn types_holding_keys_wipe_them_when_dropped() {
    fn wiped<T: zeroize::ZeroizeOnDrop>() {}
    // Encodings and text forms come back in `Zeroizing`; keyring epochs
    // are checked byte by byte in keyring.rs. (The AEAD's copy of a file
    // or wrap key is ring's, which is not wiped: see segment.rs.)
    wiped::<zeroize::Zeroizing<Vec<u8>>>();
    wiped::<zeroize::Zeroizing<String>>();

    // A device key, byte by byte.
    let mut slot = std::mem::ManuallyDrop::new(Identity::from_bytes([0x4b; 32]));
    assert_eq!(slot.secret().as_bytes(), &[0x4b; 32]);
    // SAFETY: dropped in place once; afterwards only its plain bytes are
    // read, through a copy that is forgotten rather than dropped again.
    unsafe { std::ptr::drop_in_place(&mut *slot) };
    let after: Identity = unsafe { std::ptr::read_volatile(&*slot) };
    let bytes = *after.secret().as_bytes();
    std::mem::forget(after);
    assert_eq!(bytes, [0; 32]);
}
