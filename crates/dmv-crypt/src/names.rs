//! Keyed names: what an object of an encrypted remote is called in storage
//! the user does not trust. The same id always gets the same name (so
//! deduplication and lookups work), and without the key the storage cannot
//! tell which id a name stands for, nor confirm a guess.

use crate::keyring::Keyring;

impl Keyring {
    /// The name of `id` in `domain` (what kind of thing it names: a chunk,
    /// a pack, a ref): BLAKE3 keyed by the oldest epoch's names subkey, of
    /// the domain's length (u64 LE), the domain, then the id. The length
    /// keeps `("ab", "c")` and `("a", "bc")` apart.
    pub fn name(&self, domain: &[u8], id: &[u8]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(self.names_key());
        h.update(&(domain.len() as u64).to_le_bytes());
        h.update(domain);
        h.update(id);
        *h.finalize().as_bytes()
    }

    /// [`Keyring::name`] as 64 lowercase hex digits, for object keys in a
    /// bucket or file names.
    pub fn name_hex(&self, domain: &[u8], id: &[u8]) -> String {
        hex::encode(self.name(domain, id))
    }
}

#[cfg(test)]
mod tests {
    use crate::keyring::Keyring;

    #[test]
    fn names_are_keyed_domain_separated_and_stable_across_rotation() {
        let a = Keyring::from_epochs(&[(1, [1; 32])]).unwrap();
        let b = Keyring::from_epochs(&[(1, [2; 32])]).unwrap();
        let rotated = Keyring::from_epochs(&[(1, [1; 32]), (2, [3; 32])]).unwrap();
        assert_eq!(a.name(b"chunk", b"id"), a.name(b"chunk", b"id"));
        assert_ne!(a.name(b"chunk", b"id"), b.name(b"chunk", b"id"));
        assert_ne!(a.name(b"chunk", b"id"), a.name(b"pack", b"id"));
        assert_ne!(a.name(b"ab", b"c"), a.name(b"a", b"bc"));
        assert_eq!(a.name(b"chunk", b"id"), rotated.name(b"chunk", b"id"));
        assert_eq!(
            a.name_hex(b"chunk", b"id"),
            hex::encode(a.name(b"chunk", b"id"))
        );
        // Not the unkeyed hash, which anyone could compute from a known id.
        assert_ne!(a.name(b"", b"id"), *blake3::hash(b"id").as_bytes());
    }
}
