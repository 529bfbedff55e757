//! End-to-end encryption for remotes the user does not trust (a bucket, a
//! friend's server): what DMV stores there is sealed here, named by keyed
//! hashes, and opened only with the repository key, which travels wrapped
//! for each device's key or for a passphrase.
//!
//! * [`Keyring`]: the repository key by epoch; rotation adds one, the
//!   newest seals, every epoch opens what it sealed.
//! * [`Keyring::name`]: the name an id gets in storage (keyed BLAKE3).
//! * [`seal`], [`Sealer`], [`open`]: sealed objects, Padmé-padded and cut
//!   into 64 KiB segments that each authenticate on their own, so a range
//!   of a large object is read without fetching the rest
//!   ([`SealedLayout`], [`open_segments`], [`SealedReader`]).
//! * [`Identity`], [`Recipient`], [`wrap_for`], [`wrap_with_passphrase`]:
//!   the keyring wrapped for an X25519 device key (as age does) or an
//!   Argon2id-stretched passphrase.
//!
//! The formats, with golden vectors, are in docs/formats.md ("Encrypted
//! remotes"). Nothing below the construction is written here: ChaCha20-
//! Poly1305, X25519, Argon2id and BLAKE3 come from their well-kept crates.
//! Every function takes its budgets (bytes, epochs, Argon2 cost) from the
//! caller, and no input makes one panic.

mod error;
mod identity;
mod keyring;
mod layout;
mod names;
mod open;
mod padding;
mod random;
mod segment;
mod stream;
mod wrap;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod props;

pub use error::{Error, Result};
pub use identity::{Identity, KeyId, Recipient, PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX};
pub use keyring::{Keyring, FIRST_EPOCH, KEYRING_MAGIC, KEYRING_VERSION};
pub use layout::{
    Header, SealedLayout, HEADER_LEN, LENGTH_LEN, MAX_DATA_LEN, SEALED_MAGIC, SEALED_SEGMENT_LEN,
    SEALED_VERSION, SEGMENT_LEN, TAG_LEN,
};
pub use open::{open, open_segments, open_segments_in_place, SealedReader};
pub use padding::padded_len;
pub use stream::{seal, Sealer};
pub use wrap::{
    unwrap_with_identity, unwrap_with_passphrase, wrap_for, wrap_kind, wrap_with_passphrase,
    wrapped_epochs, PassphraseCost, WrapKind, WRAPPED_MAGIC, WRAPPED_VERSION,
};
