//! The bucket's ref table: one object, `refs`, replaced whole by a
//! compare-and-swap on its ETag (docs/object-storage.md).
//!
//! Layout: `magic "DMVREFS\0" | version u32 LE | postcard(table) | BLAKE3 of all before`.
//! Version 1 holds `{ head, refs }`; version 2 adds the drop state, and is
//! written only once a drop has run, so a bucket that never saw one stays
//! readable by a dmv that knows version 1 only.

use std::collections::BTreeMap;

use dmv_store::ObjectId;
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"DMVREFS\0";
const VERSION: u32 = 2;
const CHECKSUM_LEN: usize = 32;

/// The bucket's refs, as one object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefTable {
    /// The branch a clone checks out (`refs/heads/...`).
    pub head: Option<String>,
    /// Every ref, by full name, and the commit it names.
    pub refs: BTreeMap<String, ObjectId>,
    /// Drops begun and the one running now.
    pub drops: DropState,
}

/// Drops of data from the bucket. They live in the ref table because it is
/// the one object every push swaps at its end: a push that began before a
/// drop, or while one held the lease, sees it there and refuses to move refs
/// (objects it skipped as present may be gone).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropState {
    /// Drops ever begun.
    pub begun: u64,
    /// The drop running now, if its lease has not expired.
    pub lease: Option<DropLease>,
}

/// The hold a running drop has on the bucket: no push moves refs while it
/// is active, and no other drop starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropLease {
    /// A random token of the drop that holds it.
    pub holder: String,
    /// Nanoseconds since the Unix epoch, on the holder's clock.
    pub expires_ns: u64,
}

impl DropLease {
    /// Whether it still holds at `now_ns` (nanoseconds since the Unix epoch).
    pub fn active(&self, now_ns: u64) -> bool {
        now_ns < self.expires_ns
    }
}

/// Version 1's body.
#[derive(Serialize, Deserialize)]
struct TableV1 {
    head: Option<String>,
    refs: BTreeMap<String, ObjectId>,
}

impl RefTable {
    /// The object's bytes: version 1 while no drop has run, else version 2.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.refs.len() * 80);
        out.extend_from_slice(MAGIC);
        // Strings, integers and fixed arrays cannot fail to serialize.
        if self.drops == DropState::default() {
            out.extend_from_slice(&1u32.to_le_bytes());
            out.extend_from_slice(
                &postcard::to_stdvec(&(&self.head, &self.refs)).unwrap_or_default(),
            );
        } else {
            out.extend_from_slice(&VERSION.to_le_bytes());
            out.extend_from_slice(&postcard::to_stdvec(self).unwrap_or_default());
        }
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }

    /// Reads either version, after checking the checksum; the error says what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<RefTable, String> {
        if bytes.len() < MAGIC.len() + 4 + CHECKSUM_LEN || &bytes[..MAGIC.len()] != MAGIC {
            return Err("not a DMV ref table".into());
        }
        let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        if blake3::hash(body).as_bytes() != sum {
            return Err("ref table checksum mismatch".into());
        }
        let version = u32::from_le_bytes([body[8], body[9], body[10], body[11]]);
        let bad = |e: postcard::Error| format!("bad ref table: {e}");
        let (table, rest) = match version {
            1 => {
                let (v1, rest): (TableV1, &[u8]) = postcard::take_from_bytes(&body[12..]).map_err(bad)?;
                (RefTable { head: v1.head, refs: v1.refs, drops: DropState::default() }, rest)
            }
            VERSION => postcard::take_from_bytes(&body[12..]).map_err(bad)?,
            _ => return Err(format!("ref table version {version} is not supported by this dmv (supports 1 and {VERSION})")),
        };
        if !rest.is_empty() {
            return Err("trailing bytes after the ref table".into());
        }
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn table() -> impl Strategy<Value = RefTable> {
        let refs = proptest::collection::btree_map(
            "refs/(heads|tags)/[a-z0-9/._-]{1,20}",
            any::<[u8; 32]>().prop_map(ObjectId),
            0..20,
        );
        let lease = proptest::option::of(
            ("[0-9a-f]{0,32}", any::<u64>())
                .prop_map(|(holder, expires_ns)| DropLease { holder, expires_ns }),
        );
        let drops = prop_oneof![
            Just(DropState::default()),
            (any::<u64>(), lease).prop_map(|(begun, lease)| DropState { begun, lease })
        ];
        (proptest::option::of("refs/heads/[a-z]{1,8}"), refs, drops)
            .prop_map(|(head, refs, drops)| RefTable { head, refs, drops })
    }

    #[test]
    fn golden_bytes_of_both_versions() {
        let mut t = RefTable {
            head: Some("refs/heads/main".into()),
            refs: BTreeMap::from([("refs/heads/main".into(), ObjectId([0xab; 32]))]),
            drops: DropState::default(),
        };
        let v1 = t.encode();
        let mut want =
            b"DMVREFS\0\x01\0\0\0\x01\x0frefs/heads/main\x01\x0frefs/heads/main".to_vec();
        want.extend_from_slice(&[0xab; 32]);
        assert_eq!(&v1[..v1.len() - 32], &want[..]);
        t.drops = DropState {
            begun: 3,
            lease: Some(DropLease {
                holder: "ab".into(),
                expires_ns: 5,
            }),
        };
        let v2 = t.encode();
        want[8] = 2;
        want.extend_from_slice(b"\x03\x01\x02ab\x05");
        assert_eq!(&v2[..v2.len() - 32], &want[..]);
        assert_eq!(RefTable::decode(&v2).unwrap(), t);
    }

    proptest! {
        #[test]
        fn round_trips(t in table()) {
            prop_assert_eq!(RefTable::decode(&t.encode()).unwrap(), t);
        }

        #[test]
        fn any_damage_is_refused_without_panic(t in table(), at in any::<prop::sample::Index>(), flip in 1u8..=255) {
            let mut bytes = t.encode();
            let i = at.index(bytes.len());
            bytes[i] ^= flip;
            prop_assert!(RefTable::decode(&bytes).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = RefTable::decode(&bytes);
        }

        #[test]
        fn truncation_is_refused(t in table(), cut in any::<prop::sample::Index>()) {
            let bytes = t.encode();
            let n = cut.index(bytes.len());
            prop_assert!(RefTable::decode(&bytes[..n]).is_err());
        }
    }
}
