//! What can go wrong, one enum for the crate. Every message is one plain
//! line that names what is wrong, never a command: the front end that shows
//! it adds its own hints.

/// An error of sealing, opening, wrapping or parsing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes do not start with this format's magic.
    #[error("not {what}")]
    NotOurs {
        /// "an encrypted object", "a keyring", "a wrapped keyring".
        what: &'static str,
    },
    /// A later version of the format, which this one cannot read.
    #[error("{what} made by a newer version (format {version})")]
    NewerFormat {
        /// What was read, as in [`Error::NotOurs`].
        what: &'static str,
        /// The version byte found.
        version: u8,
    },
    /// The bytes have this format's magic but do not follow it.
    #[error("{what} is damaged: {why}")]
    Damaged {
        /// What was read, as in [`Error::NotOurs`].
        what: &'static str,
        /// What does not hold.
        why: &'static str,
    },
    /// No sealed object has this length: it was cut short or extended.
    #[error("{len} bytes is not the length of an encrypted object: it was cut short or extended")]
    NotASealedLength {
        /// The length given.
        len: u64,
    },
    /// A segment's tag did not verify: changed, moved, swapped, or opened
    /// with another object's associated data.
    #[error(
        "segment {index} failed authentication: the object was changed or is not the one asked for"
    )]
    Segment {
        /// The segment's index in its object (the first is 0).
        index: u64,
    },
    /// The object was sealed under an epoch this keyring does not hold.
    #[error("no key of this keyring opens epoch {epoch}")]
    UnknownEpoch {
        /// The epoch named in the object's header.
        epoch: u32,
    },
    /// The object holds more bytes than the caller's budget.
    #[error("the object holds {len} bytes, over the budget of {budget} bytes")]
    OverBudget {
        /// The object's length.
        len: u64,
        /// The caller's budget.
        budget: u64,
    },
    /// A keyring declares more epochs than the caller's budget.
    #[error("the keyring holds {count} epochs, over the budget of {budget}")]
    TooManyEpochs {
        /// The count the keyring declares.
        count: u32,
        /// The caller's budget.
        budget: u32,
    },
    /// A wrapped keyring asks its reader for more work or memory than the
    /// caller allows (a hostile one could ask for gigabytes).
    #[error(
        "the passphrase's key derivation asks for {asked} {what}, over the budget of {budget}"
    )]
    CostOverBudget {
        /// "KiB of memory", "iterations", "lanes".
        what: &'static str,
        /// What the wrapped keyring asks for.
        asked: u32,
        /// The caller's budget.
        budget: u32,
    },
    /// Key derivation parameters that Argon2id refuses.
    #[error("the passphrase's key derivation parameters are not valid: {0}")]
    BadCost(&'static str),
    /// The key or passphrase does not open the wrapped keyring (or the
    /// wrapped keyring was changed; the two cannot be told apart).
    #[error("{key} does not open this wrapped keyring")]
    WrongKey {
        /// "this device key", "this passphrase".
        key: &'static str,
    },
    /// A wrapped keyring of the other kind.
    #[error("this keyring is wrapped for {found}, not for {expected}")]
    WrongKind {
        /// The kind that was asked to open it.
        expected: &'static str,
        /// The kind it is.
        found: &'static str,
    },
    /// A text form of a key that does not parse.
    #[error("not {what}: expected {expected}")]
    BadKeyText {
        /// "a secret key", "a public key".
        what: &'static str,
        /// The form that was expected.
        expected: &'static str,
    },
    /// A public key that gives an all-zero shared secret.
    #[error("the public key is a low-order point: no shared secret comes from it")]
    LowOrderKey,
    /// The keyring's newest epoch is `u32::MAX`.
    #[error("the keyring's newest epoch is the last there can be")]
    NoEpochLeft,
    /// A streaming sealer was given another number of bytes than declared.
    #[error("{written} bytes written of the {declared} declared")]
    LengthMismatch {
        /// The length declared when the sealer was made.
        declared: u64,
        /// The bytes given (at least; a write past the length stops there).
        written: u64,
    },
    /// Too large to seal (the limit is far above any real file).
    #[error("an object of {len} bytes is over the largest that can be sealed")]
    TooLargeToSeal {
        /// The length given.
        len: u64,
    },
    /// A range of plaintext or segments outside the object.
    #[error("the range {start}..{end} is not within the object's {len} bytes")]
    BadRange {
        /// Start of the range asked for.
        start: u64,
        /// End of the range asked for.
        end: u64,
        /// The length it must fit in.
        len: u64,
    },
    /// Bytes handed to `open_segments` that are not whole sealed segments.
    #[error("{len} bytes are not whole sealed segments")]
    NotWholeSegments {
        /// The length given.
        len: u64,
    },
    /// The storage gave back another number of bytes than asked for.
    #[error("asked the storage for {asked} bytes and got {got}")]
    ShortRead {
        /// Bytes asked for.
        asked: u64,
        /// Bytes received.
        got: u64,
    },
    /// Memory for a buffer could not be had.
    #[error("cannot allocate {bytes} bytes for {what}")]
    OutOfMemory {
        /// What the buffer was for.
        what: &'static str,
        /// Its size.
        bytes: u64,
    },
    /// The operating system's random number generator failed.
    #[error("cannot read randomness from the system: {0}")]
    Randomness(String),
    /// Reading or writing the bytes failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
