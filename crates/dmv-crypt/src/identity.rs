//! Device keys: an X25519 secret ([`Identity`]) kept on one device, and its
//! public half ([`Recipient`]) that anyone may wrap a keyring for (as age
//! does). Their text forms are strict, so a key copied wrong is refused
//! rather than read as another key.

use std::fmt;
use std::str::FromStr;

use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::random::random_bytes;

/// What a secret key's text form starts with.
pub const SECRET_KEY_PREFIX: &str = "DMV-SECRET-KEY-1";
/// What a public key's text form starts with.
pub const PUBLIC_KEY_PREFIX: &str = "dmvpub1";

/// A device's secret key. Wiped when dropped (by `x25519-dalek`); its
/// `Debug` shows only its public key's id.
pub struct Identity {
    secret: StaticSecret,
}

/// A device's public key, which keyrings are wrapped for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Recipient {
    public: PublicKey,
}

/// A short id of a public key for listings: the first 8 bytes of BLAKE3 of
/// the key, shown as 16 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub [u8; 8]);

impl Identity {
    /// A new random device key.
    pub fn generate() -> Result<Identity> {
        let bytes = Zeroizing::new(random_bytes::<32>()?);
        Ok(Identity::from_bytes(*bytes))
    }

    pub(crate) fn from_bytes(bytes: [u8; 32]) -> Identity {
        Identity {
            secret: StaticSecret::from(bytes),
        }
    }

    /// Reads the text form: `DMV-SECRET-KEY-1` and 64 uppercase hex
    /// digits, nothing before or after (not even a newline).
    pub fn parse(text: &str) -> Result<Identity> {
        let bad = Error::BadKeyText {
            what: "a secret key",
            expected: "DMV-SECRET-KEY-1 and 64 uppercase hex digits",
        };
        let bytes = text
            .strip_prefix(SECRET_KEY_PREFIX)
            .and_then(|hex| parse_hex(hex, |c| matches!(c, b'0'..=b'9' | b'A'..=b'F')))
            .ok_or(bad)?;
        Ok(Identity::from_bytes(*bytes))
    }

    /// The text form [`Identity::parse`] reads. Secret: wiped when dropped.
    pub fn to_text(&self) -> Zeroizing<String> {
        let hex = Zeroizing::new(hex::encode_upper(self.secret.as_bytes()));
        let mut text = Zeroizing::new(String::with_capacity(SECRET_KEY_PREFIX.len() + 64));
        text.push_str(SECRET_KEY_PREFIX);
        text.push_str(&hex);
        text
    }

    /// The public key that keyrings are wrapped for.
    pub fn recipient(&self) -> Recipient {
        Recipient {
            public: PublicKey::from(&self.secret),
        }
    }

    pub(crate) fn secret(&self) -> &StaticSecret {
        &self.secret
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Identity({})", self.recipient().key_id())
    }
}

impl FromStr for Identity {
    type Err = Error;
    fn from_str(text: &str) -> Result<Identity> {
        Identity::parse(text)
    }
}

impl Recipient {
    /// Reads the text form: `dmvpub1` and 64 lowercase hex digits, nothing
    /// before or after.
    pub fn parse(text: &str) -> Result<Recipient> {
        let bad = Error::BadKeyText {
            what: "a public key",
            expected: "dmvpub1 and 64 lowercase hex digits",
        };
        let bytes = text
            .strip_prefix(PUBLIC_KEY_PREFIX)
            .and_then(|hex| parse_hex(hex, |c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
            .ok_or(bad)?;
        Ok(Recipient::from_bytes(*bytes))
    }

    /// The recipient of a raw 32-byte X25519 public key.
    pub fn from_bytes(bytes: [u8; 32]) -> Recipient {
        Recipient {
            public: PublicKey::from(bytes),
        }
    }

    /// The raw 32-byte X25519 public key.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.public.to_bytes()
    }

    /// The text form [`Recipient::parse`] reads (also its `Display`).
    pub fn to_text(&self) -> String {
        format!("{PUBLIC_KEY_PREFIX}{}", hex::encode(self.public.as_bytes()))
    }

    /// The key's short id, for listings and to find a device's wrapped key.
    pub fn key_id(&self) -> KeyId {
        let mut id = [0u8; 8];
        id.copy_from_slice(&blake3::hash(self.public.as_bytes()).as_bytes()[..8]);
        KeyId(id)
    }

    pub(crate) fn public(&self) -> &PublicKey {
        &self.public
    }
}

impl fmt::Display for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl fmt::Debug for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Recipient({})", self.to_text())
    }
}

impl FromStr for Recipient {
    type Err = Error;
    fn from_str(text: &str) -> Result<Recipient> {
        Recipient::parse(text)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// 64 hex digits, each allowed by `digit`, as 32 bytes (wiped when dropped).
fn parse_hex(text: &str, digit: fn(u8) -> bool) -> Option<Zeroizing<[u8; 32]>> {
    if text.len() != 64 || !text.bytes().all(digit) {
        return None;
    }
    let mut out = Zeroizing::new([0u8; 32]);
    hex::decode_to_slice(text, out.as_mut()).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip_and_are_strict() {
        let id = Identity::from_bytes([0x4b; 32]);
        let text = id.to_text();
        assert_eq!(
            text.as_str(),
            format!("DMV-SECRET-KEY-1{}", "4B".repeat(32))
        );
        let back = Identity::parse(&text).unwrap();
        assert_eq!(back.recipient(), id.recipient());
        let public = id.recipient().to_text();
        assert!(public.starts_with("dmvpub1") && public.len() == 71);
        assert_eq!(Recipient::parse(&public).unwrap(), id.recipient());
        assert_eq!(public.parse::<Recipient>().unwrap(), id.recipient());

        for bad in [
            format!("DMV-SECRET-KEY-1{}", "4b".repeat(32)),
            format!("DMV-SECRET-KEY-1{}", "4B".repeat(31)),
            format!("DMV-SECRET-KEY-1{}\n", "4B".repeat(32)),
            format!(" DMV-SECRET-KEY-1{}", "4B".repeat(32)),
            format!("DMV-SECRET-KEY-2{}", "4B".repeat(32)),
            format!("DMV-SECRET-KEY-1{}4G", "4B".repeat(31)),
            format!("DMV-SECRET-KEY-1+{}", "4B".repeat(31)),
            String::new(),
        ] {
            assert_eq!(
                Identity::parse(&bad).unwrap_err().to_string(),
                "not a secret key: expected DMV-SECRET-KEY-1 and 64 uppercase hex digits"
            );
        }
        let upper = public.replacen("dmvpub1", "DMVPUB1", 1);
        for bad in [
            public.to_uppercase(),
            upper,
            format!("{public}\n"),
            public[..70].to_string(),
            format!("dmvpub1{}", "é".repeat(32)),
        ] {
            assert_eq!(
                Recipient::parse(&bad).unwrap_err().to_string(),
                "not a public key: expected dmvpub1 and 64 lowercase hex digits"
            );
        }
    }

    #[test]
    fn debug_and_key_id_show_no_secret() {
        let id = Identity::from_bytes([0x4b; 32]);
        let r = id.recipient();
        let debug = format!("{id:?}");
        assert_eq!(debug, format!("Identity({})", r.key_id()));
        assert!(!debug.contains("4b4b"));
        assert_eq!(r.key_id().to_string().len(), 16);
        assert_eq!(r.key_id().0, blake3::hash(&r.to_bytes()).as_bytes()[..8]);
    }
}
