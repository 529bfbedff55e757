//! The bucket's ref table: one object, `refs`, replaced whole by a
//! compare-and-swap on its ETag (docs/object-storage.md).
//!
//! Layout: `magic "DMVREFS\0" | version u32 LE | postcard(RefTable) | BLAKE3 of all before`.

use std::collections::BTreeMap;

use dmv_store::ObjectId;
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"DMVREFS\0";
const VERSION: u32 = 1;
const CHECKSUM_LEN: usize = 32;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefTable {
    /// The branch a clone checks out (`refs/heads/...`).
    pub head: Option<String>,
    pub refs: BTreeMap<String, ObjectId>,
}

impl RefTable {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.refs.len() * 80);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        // A BTreeMap of strings and fixed arrays cannot fail to serialize.
        out.extend_from_slice(&postcard::to_stdvec(self).unwrap_or_default());
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<RefTable, String> {
        if bytes.len() < MAGIC.len() + 4 + CHECKSUM_LEN || &bytes[..MAGIC.len()] != MAGIC {
            return Err("not a DMV ref table".into());
        }
        let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        if blake3::hash(body).as_bytes() != sum {
            return Err("ref table checksum mismatch".into());
        }
        let version = u32::from_le_bytes([body[8], body[9], body[10], body[11]]);
        if version != VERSION {
            return Err(format!("ref table version {version} is not supported by this dmv (supports {VERSION})"));
        }
        let (table, rest): (RefTable, &[u8]) = postcard::take_from_bytes(&body[12..]).map_err(|e| format!("bad ref table: {e}"))?;
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
        let refs = proptest::collection::btree_map("refs/(heads|tags)/[a-z0-9/._-]{1,20}", any::<[u8; 32]>().prop_map(ObjectId), 0..20);
        (proptest::option::of("refs/heads/[a-z]{1,8}"), refs).prop_map(|(head, refs)| RefTable { head, refs })
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
