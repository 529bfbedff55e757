//! The keyring wrapped for one device's key or for a passphrase, so it can
//! be stored beside the data it opens: only that device, or someone who
//! knows the passphrase, gets it back.
//!
//! ```text
//! x25519      "DMVW" | 1 | kind 1 | key id [8] | ephemeral public key [32]        46 bytes
//! passphrase  "DMVW" | 1 | kind 2 | salt [16] | memory KiB u32 | iterations u32
//!             | lanes u32                                                         34 bytes
//! then        ChaCha20-Poly1305(wrap key, nonce 0, aad = the bytes above) of the
//!             keyring's encoding, + 16-byte tag
//! ```
//!
//! Each wrap key is used once (a fresh ephemeral key or salt each time), so
//! the zero nonce never repeats under a key.

use argon2::{Algorithm, Argon2, Block, Params, Version};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305};
use x25519_dalek::{PublicKey, SharedSecret, StaticSecret};
use zeroize::{Zeroize, Zeroizing};

use crate::error::{Error, Result};
use crate::identity::{Identity, KeyId, Recipient};
use crate::keyring::Keyring;
use crate::random::random_bytes;

/// `DMVW`: the start of a wrapped keyring.
pub const WRAPPED_MAGIC: &[u8; 4] = b"DMVW";
/// The wrapped keyring format's version.
pub const WRAPPED_VERSION: u8 = 1;
const KIND_X25519: u8 = 1;
const KIND_PASSPHRASE: u8 = 2;
const X25519_HEADER_LEN: usize = 46;
const PASSPHRASE_HEADER_LEN: usize = 34;
const TAG_LEN: usize = 16;

const X25519_CONTEXT: &str = "dmv 2026-12 key wrap: x25519";
const PASSPHRASE_CONTEXT: &str = "dmv 2026-12 key wrap: passphrase";
const WHAT: &str = "a wrapped keyring";
const DEVICE: &str = "a device key";
const PASSPHRASE: &str = "a passphrase";

/// Argon2id's cost, chosen by whoever wraps and recorded in the wrapped
/// keyring; a reader bounds each by its own budget before paying it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassphraseCost {
    /// Memory in KiB (at least 8 per lane).
    pub memory_kib: u32,
    /// Passes over the memory (at least 1).
    pub iterations: u32,
    /// Lanes (at least 1).
    pub lanes: u32,
}

impl Default for PassphraseCost {
    /// 64 MiB, 3 passes, 1 lane (paid once per unlock, not per object).
    fn default() -> PassphraseCost {
        PassphraseCost {
            memory_kib: 64 * 1024,
            iterations: 3,
            lanes: 1,
        }
    }
}

impl PassphraseCost {
    /// Refuses a cost above `budget` in any of its three parts.
    pub fn within(&self, budget: &PassphraseCost) -> Result<()> {
        for (what, asked, most) in [
            ("KiB of memory", self.memory_kib, budget.memory_kib),
            ("iterations", self.iterations, budget.iterations),
            ("lanes", self.lanes, budget.lanes),
        ] {
            if asked > most {
                return Err(Error::CostOverBudget {
                    what,
                    asked,
                    budget: most,
                });
            }
        }
        Ok(())
    }

    fn params(&self) -> Result<Params> {
        // Checked first: Argon2's own check multiplies the lanes by 8.
        if self.lanes > Params::MAX_P_COST {
            return Err(Error::BadCost("too many lanes"));
        }
        Params::new(self.memory_kib, self.iterations, self.lanes, Some(32)).map_err(|e| {
            Error::BadCost(match e {
                argon2::Error::MemoryTooLittle => "too little memory for the lanes",
                argon2::Error::TimeTooSmall => "no iterations",
                argon2::Error::ThreadsTooFew => "no lanes",
                argon2::Error::ThreadsTooMany => "too many lanes",
                _ => "refused by Argon2id",
            })
        })
    }
}

/// What a wrapped keyring opens with, read from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrapKind {
    /// The device key whose public key has this id.
    Device(KeyId),
    /// A passphrase, at this cost.
    Passphrase(PassphraseCost),
}

/// Reads what `wrapped` opens with, without opening it: which device, or a
/// passphrase at which cost.
pub fn wrap_kind(wrapped: &[u8]) -> Result<WrapKind> {
    Ok(parse(wrapped)?.kind)
}

/// How many epochs the keyring wrapped in `wrapped` holds, without opening
/// it: its length tells (as it tells the storage, docs/security.md). A
/// rotation compares copies by it, so that one cut short is finished
/// rather than forked.
pub fn wrapped_epochs(wrapped: &[u8]) -> Result<u32> {
    let stanza = parse(wrapped)?;
    let entries = wrapped
        .len()
        .checked_sub(stanza.header_len + TAG_LEN + crate::keyring::HEADER_LEN)
        .filter(|n| n % crate::keyring::ENTRY_LEN == 0)
        .ok_or(Error::Damaged {
            what: WHAT,
            why: "its length is not a keyring's",
        })?;
    u32::try_from(entries / crate::keyring::ENTRY_LEN).map_err(|_| Error::Damaged {
        what: WHAT,
        why: "its length is not a keyring's",
    })
}

/// Wraps `keyring` for `recipient`'s device key: an ephemeral X25519 key
/// agrees a secret with it, from which the wrap key is derived.
pub fn wrap_for(recipient: &Recipient, keyring: &Keyring) -> Result<Vec<u8>> {
    let ephemeral = Zeroizing::new(random_bytes::<32>()?);
    wrap_for_with(recipient, keyring, *ephemeral)
}

/// [`wrap_for`] with a given ephemeral secret, for the golden vectors.
pub(crate) fn wrap_for_with(
    recipient: &Recipient,
    keyring: &Keyring,
    ephemeral: [u8; 32],
) -> Result<Vec<u8>> {
    let ephemeral = StaticSecret::from(ephemeral);
    let ephemeral_public = PublicKey::from(&ephemeral);
    let shared = ephemeral.diffie_hellman(recipient.public());
    let key = x25519_wrap_key(shared, &ephemeral_public, recipient.public())?;
    let mut header = Vec::with_capacity(X25519_HEADER_LEN);
    header.extend_from_slice(WRAPPED_MAGIC);
    header.extend_from_slice(&[WRAPPED_VERSION, KIND_X25519]);
    header.extend_from_slice(&recipient.key_id().0);
    header.extend_from_slice(ephemeral_public.as_bytes());
    Ok(seal_keyring(&key, header, keyring))
}

/// Opens a keyring wrapped by [`wrap_for`] for this identity's public key,
/// holding at most `max_epochs` epochs.
pub fn unwrap_with_identity(
    identity: &Identity,
    wrapped: &[u8],
    max_epochs: u32,
) -> Result<Keyring> {
    let stanza = parse(wrapped)?;
    let WrapKind::Device(id) = stanza.kind else {
        return Err(Error::WrongKind {
            expected: DEVICE,
            found: PASSPHRASE,
        });
    };
    let recipient = identity.recipient();
    if id != recipient.key_id() {
        return Err(Error::WrongKey {
            key: "this device key",
        });
    }
    let mut ephemeral_public = [0u8; 32];
    ephemeral_public.copy_from_slice(&wrapped[14..X25519_HEADER_LEN]);
    let ephemeral_public = PublicKey::from(ephemeral_public);
    let shared = identity.secret().diffie_hellman(&ephemeral_public);
    let key = x25519_wrap_key(shared, &ephemeral_public, recipient.public())?;
    open_keyring(
        &key,
        wrapped,
        stanza.header_len,
        "this device key",
        max_epochs,
    )
}

/// Wraps `keyring` for a passphrase, at the given Argon2id cost and a
/// random 16-byte salt.
pub fn wrap_with_passphrase(
    passphrase: &[u8],
    keyring: &Keyring,
    cost: &PassphraseCost,
) -> Result<Vec<u8>> {
    wrap_with_passphrase_salt(passphrase, keyring, cost, random_bytes()?)
}

/// [`wrap_with_passphrase`] with a given salt, for the golden vectors.
pub(crate) fn wrap_with_passphrase_salt(
    passphrase: &[u8],
    keyring: &Keyring,
    cost: &PassphraseCost,
    salt: [u8; 16],
) -> Result<Vec<u8>> {
    let key = passphrase_wrap_key(passphrase, &salt, cost)?;
    let mut header = Vec::with_capacity(PASSPHRASE_HEADER_LEN);
    header.extend_from_slice(WRAPPED_MAGIC);
    header.extend_from_slice(&[WRAPPED_VERSION, KIND_PASSPHRASE]);
    header.extend_from_slice(&salt);
    for n in [cost.memory_kib, cost.iterations, cost.lanes] {
        header.extend_from_slice(&n.to_le_bytes());
    }
    Ok(seal_keyring(&key, header, keyring))
}

/// Opens a keyring wrapped by [`wrap_with_passphrase`], if its recorded
/// cost is within `budget` (checked before any memory is taken) and it
/// holds at most `max_epochs` epochs.
pub fn unwrap_with_passphrase(
    passphrase: &[u8],
    wrapped: &[u8],
    budget: &PassphraseCost,
    max_epochs: u32,
) -> Result<Keyring> {
    let stanza = parse(wrapped)?;
    let WrapKind::Passphrase(cost) = stanza.kind else {
        return Err(Error::WrongKind {
            expected: PASSPHRASE,
            found: DEVICE,
        });
    };
    cost.within(budget)?;
    let mut salt = [0u8; 16];
    salt.copy_from_slice(&wrapped[6..22]);
    let key = passphrase_wrap_key(passphrase, &salt, &cost)?;
    open_keyring(
        &key,
        wrapped,
        stanza.header_len,
        "this passphrase",
        max_epochs,
    )
}

/// A wrapped keyring's header, read.
struct Stanza {
    kind: WrapKind,
    header_len: usize,
}

fn parse(wrapped: &[u8]) -> Result<Stanza> {
    if wrapped.get(..4) != Some(WRAPPED_MAGIC.as_slice()) {
        return Err(Error::NotOurs { what: WHAT });
    }
    let damaged = |why| Error::Damaged { what: WHAT, why };
    match wrapped.get(4) {
        None => return Err(damaged("it is cut short")),
        Some(&WRAPPED_VERSION) => {}
        Some(0) => return Err(damaged("its version is 0")),
        Some(&version) => {
            return Err(Error::NewerFormat {
                what: WHAT,
                version,
            })
        }
    }
    let (kind, header_len) = match wrapped.get(5) {
        Some(&KIND_X25519) if wrapped.len() >= X25519_HEADER_LEN => {
            let mut id = [0u8; 8];
            id.copy_from_slice(&wrapped[6..14]);
            (WrapKind::Device(KeyId(id)), X25519_HEADER_LEN)
        }
        Some(&KIND_PASSPHRASE) if wrapped.len() >= PASSPHRASE_HEADER_LEN => {
            let n = |at: usize| {
                u32::from_le_bytes([
                    wrapped[at],
                    wrapped[at + 1],
                    wrapped[at + 2],
                    wrapped[at + 3],
                ])
            };
            let cost = PassphraseCost {
                memory_kib: n(22),
                iterations: n(26),
                lanes: n(30),
            };
            (WrapKind::Passphrase(cost), PASSPHRASE_HEADER_LEN)
        }
        Some(&KIND_X25519 | &KIND_PASSPHRASE) | None => return Err(damaged("it is cut short")),
        Some(_) => return Err(damaged("its kind of key is not known")),
    };
    if wrapped.len() < header_len + TAG_LEN {
        return Err(damaged("it is cut short"));
    }
    Ok(Stanza { kind, header_len })
}

/// The wrap key of an X25519 wrap, refusing a low-order public key (an
/// all-zero secret, which anyone could compute).
fn x25519_wrap_key(
    shared: SharedSecret,
    ephemeral: &PublicKey,
    recipient: &PublicKey,
) -> Result<Zeroizing<[u8; 32]>> {
    if !shared.was_contributory() {
        return Err(Error::LowOrderKey);
    }
    // Both public keys go in, as in age: the key is bound to this pair.
    let mut h = blake3::Hasher::new_derive_key(X25519_CONTEXT);
    h.update(shared.as_bytes());
    h.update(ephemeral.as_bytes());
    h.update(recipient.as_bytes());
    let key = Zeroizing::new(*h.finalize().as_bytes());
    h.zeroize();
    Ok(key)
}

/// The wrap key of a passphrase wrap: Argon2id's 32 bytes, then BLAKE3
/// `derive_key` so the key serves this one purpose.
fn passphrase_wrap_key(
    passphrase: &[u8],
    salt: &[u8; 16],
    cost: &PassphraseCost,
) -> Result<Zeroizing<[u8; 32]>> {
    let params = cost.params()?;
    let blocks_len = params.block_count();
    let mut blocks: Vec<Block> = Vec::new();
    blocks
        .try_reserve_exact(blocks_len)
        .map_err(|_| Error::OutOfMemory {
            what: "the passphrase's key derivation",
            bytes: blocks_len as u64 * 1024,
        })?;
    blocks.resize(blocks_len, Block::default());
    let mut stretched = Zeroizing::new([0u8; 32]);
    let result = Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password_into_with_memory(passphrase, salt, stretched.as_mut(), &mut blocks[..]);
    // The memory holds what the passphrase was stretched through.
    for block in &mut blocks {
        block.zeroize();
    }
    result.map_err(|_| Error::BadCost("refused by Argon2id"))?;
    Ok(Zeroizing::new(blake3::derive_key(
        PASSPHRASE_CONTEXT,
        stretched.as_ref(),
    )))
}

/// Header, then the keyring's encoding sealed under `key` with the header
/// as associated data.
fn seal_keyring(key: &[u8; 32], mut out: Vec<u8>, keyring: &Keyring) -> Vec<u8> {
    let header_len = out.len();
    let encoding = keyring.encode();
    // One allocation, so no copy of the plaintext is left in a freed one.
    out.reserve_exact(encoding.len() + TAG_LEN);
    out.extend_from_slice(&encoding);
    let (header, body) = out.split_at_mut(header_len);
    // Encryption fails only past ChaCha20's 256 GiB per nonce.
    let mut tag = [0u8; TAG_LEN];
    if let Ok(t) = wrap_cipher(key).seal_in_place_separate_tag(
        Nonce::assume_unique_for_key([0; 12]),
        Aad::from(&*header),
        body,
    ) {
        tag.copy_from_slice(t.as_ref());
    }
    out.extend_from_slice(&tag);
    out
}

/// ChaCha20-Poly1305 (RFC 8439) under a wrap key, from `ring`, as the
/// segments are. The key is used once per wrap (a fresh salt or ephemeral
/// key each time), so the nonce is zero. ring does not wipe its copy of
/// the key when dropped; the key it is made from is wiped.
fn wrap_cipher(key: &[u8; 32]) -> LessSafeKey {
    // A 32-byte key is what CHACHA20_POLY1305 takes: this cannot fail.
    LessSafeKey::new(
        UnboundKey::new(&CHACHA20_POLY1305, key).unwrap_or_else(|_| unreachable!("a 32-byte key")),
    )
}

fn open_keyring(
    key: &[u8; 32],
    wrapped: &[u8],
    header_len: usize,
    which: &'static str,
    max_epochs: u32,
) -> Result<Keyring> {
    let (header, rest) = wrapped.split_at(header_len);
    let mut plain = Zeroizing::new(rest.to_vec());
    let opened = wrap_cipher(key)
        .open_in_place(
            Nonce::assume_unique_for_key([0; 12]),
            Aad::from(header),
            &mut plain,
        )
        .map_err(|_| Error::WrongKey { key: which })?;
    Keyring::decode(opened, max_epochs)
}
