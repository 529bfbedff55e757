//! Golden vectors: fixed keys, nonces, salts and ephemeral secrets, and the
//! exact bytes (or their BLAKE3) they give. The same vectors are in
//! docs/formats.md; a change that fails here changes the format: bump its
//! version, keep reading the old one, and replace the vectors. (In the
//! crate, not in tests/, because the fixed nonces go through private
//! functions.)

use dmv_testkit::golden::assert_golden;

use crate::identity::Identity;
use crate::keyring::Keyring;
use crate::open::open;
use crate::stream::{seal_with_nonce, Sealer};
use crate::wrap::{
    unwrap_with_identity, unwrap_with_passphrase, wrap_for_with, wrap_with_passphrase_salt,
    PassphraseCost,
};

/// `n` bytes counting up from `from`.
pub(crate) fn counting(from: u8, n: usize) -> Vec<u8> {
    (0..n).map(|i| from.wrapping_add(i as u8)).collect()
}

fn array(from: u8) -> [u8; 32] {
    counting(from, 32).try_into().unwrap()
}

/// Epoch 1 with key 00 01 .. 1f.
pub(crate) fn ring1() -> Keyring {
    Keyring::from_epochs(&[(1, array(0x00))]).unwrap()
}

/// Epochs 1 (key 00 .. 1f) and 2 (key 20 .. 3f).
pub(crate) fn ring2() -> Keyring {
    Keyring::from_epochs(&[(1, array(0x00)), (2, array(0x20))]).unwrap()
}

pub(crate) fn nonce() -> [u8; 16] {
    counting(0x40, 16).try_into().unwrap()
}

#[test]
fn keyring_encoding() {
    assert_golden(
        "keyring of epochs 1 and 2",
        &ring2().encode(),
        &[
            "444d564b",
            "01",
            "02000000",
            "01000000",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "02000000",
            "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
        ],
    );
}

#[test]
fn subkeys() {
    let ring = ring1();
    assert_eq!(
        hex::encode(ring.names_key()),
        "c2991f4f4f790d03ae8d201457e176c0e8504864b5682b4ad5b82891ce4f112c"
    );
    assert_eq!(
        hex::encode(ring.data_key(1).unwrap()),
        "1075c949d4b4f4cc3732a7446abdc25a7ef3dcee559628f6f7411217009613e9"
    );
}

#[test]
fn keyed_name() {
    // Keyed by epoch 1 in both keyrings: rotation keeps names.
    let expected = "1abfbabcf690b77007c77668b8087003fba13fd08379dbd480a261f92c92314e";
    assert_eq!(ring1().name_hex(b"chunk", &[0x11; 32]), expected);
    assert_eq!(ring2().name_hex(b"chunk", &[0x11; 32]), expected);
}

#[test]
fn sealed_object_of_five_bytes() {
    let sealed = seal_with_nonce(&ring1(), b"aad", b"hello", nonce()).unwrap();
    assert_golden(
        "sealed \"hello\"",
        &sealed,
        &[
            "444d5645",
            "01",
            "01000000",
            "404142434445464748494a4b4c4d4e4f",
            // padded_len(5 + 8) = 14 bytes of stream, then the tag.
            "e77e6b57367f1c320d0e4f1cd50b",
            "a02d90ada61da974aeaf3a555b7d9e74",
        ],
    );
    assert_eq!(open(&ring1(), b"aad", &sealed, 5).unwrap(), b"hello");
}

#[test]
fn sealed_object_of_two_segments() {
    // 65,536 bytes of data pad to 67,584: segments of 65,536 and 2,048.
    let data = counting(0, 65_536);
    let sealed = seal_with_nonce(&ring2(), b"aad", &data, nonce()).unwrap();
    assert_eq!(sealed.len(), 25 + 67_584 + 2 * 16);
    assert_golden(
        "header of a 2-segment object (epoch 2)",
        &sealed[..25],
        &[
            "444d5645",
            "01",
            "02000000",
            "404142434445464748494a4b4c4d4e4f",
        ],
    );
    assert_eq!(
        blake3::hash(&sealed).to_hex().as_str(),
        "db66757fa611423fa52937bf51ca7a3f5441811888faef126843e415d2cbf214"
    );
    let mut streamed = Sealer::with_nonce(&ring2(), b"aad", 65_536, Vec::new(), nonce()).unwrap();
    std::io::Write::write_all(&mut streamed, &data).unwrap();
    assert_eq!(streamed.finish().unwrap(), sealed);
    assert_eq!(open(&ring2(), b"aad", &sealed, 65_536).unwrap(), data);
}

#[test]
fn x25519_wrap() {
    let identity = Identity::from_bytes(array(0x50));
    assert_eq!(
        identity.recipient().to_text(),
        "dmvpub1392d174a38b3b1beafaf1fe824870841c5fa531bc6eafdb6402c124664488c1c"
    );
    assert_eq!(
        identity.recipient().key_id().to_string(),
        "3d02bac856b3808b"
    );
    let wrapped = wrap_for_with(&identity.recipient(), &ring1(), array(0x70)).unwrap();
    assert_golden(
        "keyring of epoch 1 wrapped for a device key",
        &wrapped,
        &[
            "444d5657",
            "01",
            "01",
            // The recipient's key id, then the ephemeral public key.
            "3d02bac856b3808b",
            "23b7bb8c91ae008711fb12846780bcdf1e065f821bdfec49f57e7c7dcd4c4823",
            // The keyring's 45 bytes, sealed, then the tag.
            "1bbe6bba67147035a86f41f588e64e4439a626ab6388ee0cbb3b77074875c0d12ccc884ba0af06798ebffa09ca",
            "9613006c287864f1f7de5c4a992674e4",
        ],
    );
    let back = unwrap_with_identity(&identity, &wrapped, 1).unwrap();
    assert_eq!(back.encode(), ring1().encode());
}

#[test]
fn passphrase_wrap() {
    let cost = PassphraseCost {
        memory_kib: 64,
        iterations: 2,
        lanes: 1,
    };
    let salt: [u8; 16] = counting(0x90, 16).try_into().unwrap();
    let wrapped = wrap_with_passphrase_salt(b"correct horse", &ring1(), &cost, salt).unwrap();
    assert_golden(
        "keyring of epoch 1 wrapped for a passphrase",
        &wrapped,
        &[
            "444d5657",
            "01",
            "02",
            "909192939495969798999a9b9c9d9e9f",
            "40000000",
            "02000000",
            "01000000",
            "0ff2056de96a8480016b876a3e36882cf977a2f45f91982c190a74f48b5c1dc32bc7e4a28141c2f805e2e3fe22",
            "c76ccb962b11022bbae0b5fc91c759dc",
        ],
    );
    let back = unwrap_with_passphrase(b"correct horse", &wrapped, &cost, 1).unwrap();
    assert_eq!(back.encode(), ring1().encode());
}
