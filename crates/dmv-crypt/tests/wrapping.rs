//! The keyring wrapped for device keys and passphrases: the right key gets
//! it back, every other key, passphrase or change is a clean error, and a
//! hostile wrapped keyring cannot make its reader pay more than its budget.

use dmv_crypt::{
    unwrap_with_identity, unwrap_with_passphrase, wrap_for, wrap_kind, wrap_with_passphrase,
    wrapped_epochs, Error, Identity, Keyring, PassphraseCost, Recipient, WrapKind,
};

/// Small enough that each derivation takes a millisecond.
const CHEAP: PassphraseCost = PassphraseCost {
    memory_kib: 64,
    iterations: 1,
    lanes: 1,
};

fn ring() -> Keyring {
    Keyring::from_epochs(&[(1, [7; 32]), (4, [9; 32])]).unwrap()
}

#[test]
fn a_device_key_unwraps_what_was_wrapped_for_it() {
    let phone = Identity::generate().unwrap();
    let laptop = Identity::generate().unwrap();
    let for_phone = wrap_for(&phone.recipient(), &ring()).unwrap();
    assert_eq!(
        wrap_kind(&for_phone).unwrap(),
        WrapKind::Device(phone.recipient().key_id())
    );
    let back = unwrap_with_identity(&phone, &for_phone, 16).unwrap();
    assert_eq!(back.encode(), ring().encode());
    // Two wraps for one key differ (fresh ephemeral keys).
    assert_ne!(wrap_for(&phone.recipient(), &ring()).unwrap(), for_phone);

    assert_eq!(
        unwrap_with_identity(&laptop, &for_phone, 16)
            .unwrap_err()
            .to_string(),
        "this device key does not open this wrapped keyring"
    );
    // A wrapped keyring that claims the laptop's id still does not open.
    let mut claimed = for_phone.clone();
    claimed[6..14].copy_from_slice(&laptop.recipient().key_id().0);
    assert!(matches!(
        unwrap_with_identity(&laptop, &claimed, 16),
        Err(Error::WrongKey { .. })
    ));
    assert!(matches!(
        unwrap_with_identity(&phone, &for_phone, 1),
        Err(Error::TooManyEpochs {
            count: 2,
            budget: 1
        })
    ));
}

#[test]
fn any_change_to_a_wrapped_keyring_is_an_error() {
    let phone = Identity::generate().unwrap();
    let wrapped = wrap_for(&phone.recipient(), &ring()).unwrap();
    let by_pass = wrap_with_passphrase(b"pass", &ring(), &CHEAP).unwrap();
    for at in 0..wrapped.len() {
        let mut w = wrapped.clone();
        w[at] ^= 0x10;
        assert!(unwrap_with_identity(&phone, &w, 16).is_err(), "byte {at}");
    }
    for at in 0..by_pass.len() {
        let mut w = by_pass.clone();
        w[at] ^= 0x01;
        // Lowering the cost's bytes changes the key as surely as the rest.
        assert!(
            unwrap_with_passphrase(b"pass", &w, &CHEAP, 16).is_err(),
            "byte {at}"
        );
    }
    for cut in 0..wrapped.len() {
        assert!(unwrap_with_identity(&phone, &wrapped[..cut], 16).is_err());
    }
    let mut longer = wrapped.clone();
    longer.push(0);
    assert!(unwrap_with_identity(&phone, &longer, 16).is_err());
}

#[test]
fn a_passphrase_unwraps_what_was_wrapped_for_it() {
    let wrapped = wrap_with_passphrase(b"correct horse", &ring(), &CHEAP).unwrap();
    assert_eq!(wrap_kind(&wrapped).unwrap(), WrapKind::Passphrase(CHEAP));
    let back = unwrap_with_passphrase(b"correct horse", &wrapped, &CHEAP, 16).unwrap();
    assert_eq!(back.encode(), ring().encode());
    assert_eq!(
        unwrap_with_passphrase(b"correct horsf", &wrapped, &CHEAP, 16)
            .unwrap_err()
            .to_string(),
        "this passphrase does not open this wrapped keyring"
    );
    assert_ne!(
        wrap_with_passphrase(b"correct horse", &ring(), &CHEAP).unwrap(),
        wrapped,
        "a fresh salt each time"
    );
    // The kinds do not mix.
    let phone = Identity::generate().unwrap();
    assert_eq!(
        unwrap_with_identity(&phone, &wrapped, 16)
            .unwrap_err()
            .to_string(),
        "this keyring is wrapped for a passphrase, not for a device key"
    );
    let for_phone = wrap_for(&phone.recipient(), &ring()).unwrap();
    assert_eq!(
        unwrap_with_passphrase(b"x", &for_phone, &CHEAP, 16)
            .unwrap_err()
            .to_string(),
        "this keyring is wrapped for a device key, not for a passphrase"
    );
}

#[test]
fn a_hostile_cost_is_refused_before_it_is_paid() {
    let wrapped = wrap_with_passphrase(b"pw", &ring(), &CHEAP).unwrap();
    for (at, value, message) in [
        (
            22,
            u32::MAX,
            "the passphrase's key derivation asks for 4294967295 KiB of memory, over the budget of 65536",
        ),
        (
            26,
            1_000_000,
            "the passphrase's key derivation asks for 1000000 iterations, over the budget of 3",
        ),
        (
            30,
            u32::MAX,
            "the passphrase's key derivation asks for 4294967295 lanes, over the budget of 1",
        ),
    ] {
        let mut hostile = wrapped.clone();
        hostile[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let started = std::time::Instant::now();
        let e = unwrap_with_passphrase(b"pw", &hostile, &PassphraseCost::default(), 16);
        assert_eq!(e.unwrap_err().to_string(), message);
        assert!(started.elapsed().as_millis() < 100);
    }
    // Within the budget but not valid Argon2id: refused, not a panic.
    let mut zero = wrapped.clone();
    zero[26..30].copy_from_slice(&0u32.to_le_bytes());
    assert_eq!(
        unwrap_with_passphrase(b"pw", &zero, &CHEAP, 16)
            .unwrap_err()
            .to_string(),
        "the passphrase's key derivation parameters are not valid: no iterations"
    );
    let mut lanes = wrapped.clone();
    lanes[30..34].copy_from_slice(&1000u32.to_le_bytes());
    let generous = PassphraseCost {
        lanes: 1000,
        ..CHEAP
    };
    assert!(matches!(
        unwrap_with_passphrase(b"pw", &lanes, &generous, 16),
        Err(Error::BadCost(_))
    ));
    // And the one who wraps gets the same answers.
    let bad = PassphraseCost {
        memory_kib: 64,
        iterations: 1,
        lanes: u32::MAX,
    };
    assert!(matches!(
        wrap_with_passphrase(b"pw", &ring(), &bad),
        Err(Error::BadCost(_))
    ));
}

#[test]
fn the_default_cost_is_what_the_format_says() {
    assert_eq!(
        PassphraseCost::default(),
        PassphraseCost {
            memory_kib: 65_536,
            iterations: 3,
            lanes: 1
        }
    );
    assert!(PassphraseCost::default()
        .within(&PassphraseCost::default())
        .is_ok());
}

#[test]
fn a_wrapped_copy_shows_how_many_epochs_it_holds() {
    let phone = Identity::generate().unwrap();
    let mut ring = Keyring::generate().unwrap();
    for epochs in 1..=4u32 {
        let device = wrap_for(&phone.recipient(), &ring).unwrap();
        let passphrase = wrap_with_passphrase(b"pw", &ring, &CHEAP).unwrap();
        assert_eq!(wrapped_epochs(&device).unwrap(), epochs);
        assert_eq!(wrapped_epochs(&passphrase).unwrap(), epochs);
        // One byte more or less is no keyring's length.
        let mut longer = device.clone();
        longer.push(0);
        assert!(wrapped_epochs(&longer).is_err());
        assert!(wrapped_epochs(&device[..device.len() - 1]).is_err());
        ring.rotate().unwrap();
    }
    assert!(wrapped_epochs(b"DMVW").is_err());
    assert!(wrapped_epochs(b"not a key").is_err());
}

#[test]
fn a_low_order_public_key_is_refused() {
    // The all-zero point, and a point of order 8: every secret gives an
    // all-zero shared secret with them.
    let zero = Recipient::from_bytes([0; 32]);
    assert_eq!(
        wrap_for(&zero, &ring()).unwrap_err().to_string(),
        "the public key is a low-order point: no shared secret comes from it"
    );
    let mut order8 = [0u8; 32];
    order8.copy_from_slice(
        &hex::decode("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800").unwrap(),
    );
    assert!(matches!(
        wrap_for(&Recipient::from_bytes(order8), &ring()),
        Err(Error::LowOrderKey)
    ));
    // A wrapped keyring whose ephemeral key is low-order, for a real device.
    let phone = Identity::generate().unwrap();
    let mut wrapped = wrap_for(&phone.recipient(), &ring()).unwrap();
    wrapped[14..46].copy_from_slice(&[0; 32]);
    assert!(matches!(
        unwrap_with_identity(&phone, &wrapped, 16),
        Err(Error::LowOrderKey)
    ));
}

#[test]
fn key_text_forms_round_trip() {
    let id = Identity::generate().unwrap();
    let text = id.to_text();
    assert!(text.starts_with("DMV-SECRET-KEY-1") && text.len() == 80);
    let back: Identity = text.parse().unwrap();
    assert_eq!(back.recipient(), id.recipient());
    let public = id.recipient().to_string();
    assert_eq!(public.parse::<Recipient>().unwrap(), id.recipient());
    assert_eq!(id.recipient().key_id().to_string().len(), 16);
}
