//! Where things are in a bucket (docs/object-storage.md): the local layout,
//! `packs/pack-<sum>.pack` and `.idx` exactly as in `.dmv/objects/packs`,
//! beside a ref table and a small config.

use dmv_store::{index_file_name, pack_file_name, ObjectId};

/// The key of the repository's config object ([`crate::BucketConfig`]).
pub const CONFIG_KEY: &str = "dmv-repository.json";
/// The key of the ref table ([`crate::RefTable`]).
pub const REFS_KEY: &str = "refs";
/// Where an encrypted repository's keyring is kept, wrapped once per
/// device key and per passphrase (`keys/device-<key id>`,
/// `keys/passphrase-<random>`).
pub const KEYS_PREFIX: &str = "keys/";
/// Where packs and their indexes are, under their local file names.
pub const PACKS_PREFIX: &str = "packs/";
/// Packs in a bucket roll over at this size: large enough that listing and
/// request costs stay small, small enough that a resumed push resends little.
pub const PACK_SIZE: u64 = 32 << 20;

pub(crate) fn pack_key(pack: &ObjectId) -> String {
    format!("{PACKS_PREFIX}{}", pack_file_name(pack))
}

pub(crate) fn index_key(pack: &ObjectId) -> String {
    format!("{PACKS_PREFIX}{}", index_file_name(pack))
}

/// The pack an index's key or file name belongs to.
pub(crate) fn pack_of_index_name(name: &str) -> Option<ObjectId> {
    let name = name.rsplit('/').next()?;
    ObjectId::from_hex(name.strip_prefix("pack-")?.strip_suffix(".idx")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_names_give_their_pack() {
        let id = ObjectId([7; 32]);
        assert_eq!(pack_of_index_name(&index_key(&id)), Some(id));
        assert_eq!(pack_of_index_name(&pack_key(&id)), None);
        assert_eq!(pack_of_index_name("packs/pack-zz.idx"), None);
    }
}
