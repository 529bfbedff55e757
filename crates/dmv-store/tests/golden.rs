//! Golden vectors: fixed inputs, their exact encoded bytes and ids, checked in
//! as hex. A reordered field or enum variant, a changed magic, version or
//! checksum fails here instead of silently changing every id and every file.
//! If a change is intended, it is a format change: bump the format/version,
//! keep reading the old one, and replace these vectors (docs/formats.md).

use std::collections::HashMap;
use std::path::Path;

use dmv_store::object::{
    self, Commit, EntryKind, FileNode, NodeEntry, Signature, Tag, TreeEntry, TreeNode,
};
use dmv_store::{
    ChunkParams, FileList, ListBuilder, ListShape, NodeSink, ObjectId, ObjectKind, Store,
    StoreResult, StoredObject, Tally, TreeList,
};
use dmv_testkit::golden::{assert_golden, bytes_of, to_hex};

// ---------------------------------------------------------------------------
// helpers

fn id(byte: u8) -> ObjectId {
    ObjectId([byte; 32])
}

fn id_hex(hex: &str) -> ObjectId {
    ObjectId::from_hex(hex).unwrap()
}

/// The fanout table of an index, written out from its definition: entry i is
/// the number of ids whose first byte is <= i. `firsts` are the first bytes
/// of the (sorted) ids.
fn fanout(firsts: &[u8]) -> String {
    (0..=255u8)
        .map(|i| to_hex(&(firsts.iter().filter(|f| **f <= i).count() as u32).to_le_bytes()))
        .collect()
}

// ---------------------------------------------------------------------------
// object kinds and ids

#[test]
fn object_kind_tags_are_fixed() {
    // The kind byte is hashed into every id and written in pack records,
    // tables of contents, indexes and sync frames.
    for (kind, tag, name) in [
        (ObjectKind::Chunk, 1u8, "chunk"),
        (ObjectKind::FileNode, 2, "file"),
        (ObjectKind::Tree, 3, "tree"),
        (ObjectKind::Commit, 4, "commit"),
        (ObjectKind::Tag, 5, "tag"),
    ] {
        assert_eq!(kind as u8, tag);
        assert_eq!(ObjectKind::from_u8(tag), Some(kind));
        assert_eq!(kind.name(), name);
    }
    assert_eq!(ObjectKind::from_u8(0), None);
    assert_eq!(ObjectKind::from_u8(6), None);
    assert_eq!(object::FORMAT, 1);
}

const HELLO: &[u8] = b"hello\n";
/// BLAKE3(0x01 || "hello\n")
const HELLO_ID: &str = "60200926b98f21cddd0dc4fb5c05e6a4d7ab691b9c8b01295ebefe1daca3bbe5";
/// BLAKE3(0x01): the id of every empty file.
const EMPTY_CHUNK_ID: &str = "48fc721fbbc172e0925fa27af1671de225ba927134802998b10a1568a188652b";
/// BLAKE3(0x03 || "hello\n"): the same bytes as a tree get another id.
const HELLO_AS_TREE_ID: &str = "a5b8b1c6d2cce853d58a0169cb668c7167b3928d63153611579f4828771400f0";

#[test]
fn an_id_is_its_bytes_in_objects_and_its_hex_digits_in_json() {
    let id = id_hex("00ff10000000000000000000000000000000000000000000000000000000abcd");
    let mut raw = vec![0x00, 0xff, 0x10];
    raw.resize(30, 0);
    raw.extend([0xab, 0xcd]);
    assert_eq!(
        postcard::to_allocvec(&id).unwrap(),
        raw,
        "32 bytes, nothing around them"
    );
    assert_eq!(postcard::from_bytes::<ObjectId>(&raw).unwrap(), id);
    let json = serde_json::to_string(&id).unwrap();
    assert_eq!(
        json,
        "\"00ff10000000000000000000000000000000000000000000000000000000abcd\""
    );
    assert_eq!(serde_json::from_str::<ObjectId>(&json).unwrap(), id);
    // JSON written before ids were hex held them as 32 numbers.
    let numbers = serde_json::to_string(&id.0).unwrap();
    assert_eq!(serde_json::from_str::<ObjectId>(&numbers).unwrap(), id);
    for bad in ["\"00ff\"", "\"zz\"", "[1,2,3]", "7"] {
        assert!(serde_json::from_str::<ObjectId>(bad).is_err(), "{bad}");
    }
}

#[test]
fn chunk_golden() {
    // A chunk's encoding is its bytes; only the id is derived.
    assert_eq!(ObjectId::hash(ObjectKind::Chunk, HELLO).to_hex(), HELLO_ID);
    assert_eq!(
        ObjectId::hash(ObjectKind::Chunk, b"").to_hex(),
        EMPTY_CHUNK_ID
    );
    assert_eq!(
        ObjectId::hash(ObjectKind::Tree, HELLO).to_hex(),
        HELLO_AS_TREE_ID
    );
    assert_eq!(
        object::children(&id_hex(HELLO_ID), ObjectKind::Chunk, HELLO).unwrap(),
        vec![]
    );
}

/// Encodes `value`, compares with the golden bytes and id, and decodes the
/// golden bytes back into `value`.
fn check_object<T>(what: &str, kind: ObjectKind, value: &T, parts: &[&str], id_hex: &str)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let bytes = object::encode(value);
    assert_golden(what, &bytes, parts);
    let golden = bytes_of(parts);
    let id = ObjectId::hash(kind, &golden);
    assert_eq!(id.to_hex(), id_hex, "{what}: id changed");
    assert_eq!(
        &object::decode::<T>(&id, kind, &golden).unwrap(),
        value,
        "{what}: decoding the golden bytes"
    );
}

fn file_node() -> FileNode {
    FileNode {
        level: 0,
        entries: vec![
            NodeEntry {
                id: id(0x11),
                size: 65536,
            },
            NodeEntry {
                id: id(0x22),
                size: 100,
            },
        ],
    }
}

const FILE_NODE: &[&str] = &[
    "01",                                                               // format
    "00",                                                               // level 0
    "02",                                                               // 2 entries
    "1111111111111111111111111111111111111111111111111111111111111111", // id
    "808004",                                                           // size 65536 (varint)
    "2222222222222222222222222222222222222222222222222222222222222222", // id
    "64",                                                               // size 100
];
const FILE_NODE_ID: &str = "55dd9d70c1b1cdc035859c536274e979db53ee4123a2b4d870d7dd31c9d42062";

#[test]
fn file_node_golden() {
    check_object(
        "file node",
        ObjectKind::FileNode,
        &file_node(),
        FILE_NODE,
        FILE_NODE_ID,
    );
    let children = object::children(
        &id_hex(FILE_NODE_ID),
        ObjectKind::FileNode,
        &bytes_of(FILE_NODE),
    )
    .unwrap();
    assert_eq!(children, vec![id(0x11), id(0x22)]);
}

fn tree_leaf() -> TreeNode {
    let e = |name: &[u8], kind, byte, size| TreeEntry {
        name: name.to_vec(),
        kind,
        id: id(byte),
        size,
    };
    TreeNode::Leaf(vec![
        e(b"a.txt", EntryKind::File, 0xa1, 6),
        e(b"bin", EntryKind::Dir, 0xa2, 300),
        e(b"caf\xe9", EntryKind::Symlink, 0xa3, 4), // names are bytes, not UTF-8
        e(b"run.sh", EntryKind::Executable, 0xa4, 300),
    ])
}

const TREE_LEAF: &[&str] = &[
    "01",                                                               // format
    "00",                                                               // TreeNode::Leaf
    "04",                                                               // 4 entries
    "05 612e747874",                                                    // name "a.txt"
    "00",                                                               // EntryKind::File
    "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", // id
    "06",                                                               // size 6
    "03 62696e",                                                        // name "bin"
    "03",                                                               // EntryKind::Dir
    "a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2",
    "ac02",        // size 300
    "04 636166e9", // name "caf\xe9"
    "02",          // EntryKind::Symlink
    "a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3",
    "04",              // size 4
    "06 72756e2e7368", // name "run.sh"
    "01",              // EntryKind::Executable
    "a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4",
    "ac02", // size 300
];
const TREE_LEAF_ID: &str = "7270bec5fdc46d5dc0e8f04bc642670cdf35c0dab434ffc774460411874b6bcf";

#[test]
fn tree_leaf_golden() {
    check_object(
        "tree leaf",
        ObjectKind::Tree,
        &tree_leaf(),
        TREE_LEAF,
        TREE_LEAF_ID,
    );
}

fn tree_inner() -> TreeNode {
    TreeNode::Inner {
        level: 1,
        children: vec![
            NodeEntry {
                id: id(0xb1),
                size: 1000,
            },
            NodeEntry {
                id: id(0xb2),
                size: 0,
            },
        ],
    }
}

const TREE_INNER: &[&str] = &[
    "01",                                                               // format
    "01",                                                               // TreeNode::Inner
    "01",                                                               // level 1
    "02",                                                               // 2 children
    "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1", // id
    "e807",                                                             // size 1000
    "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2", // id
    "00",                                                               // size 0
];
const TREE_INNER_ID: &str = "cf52a33f6a0b6024cb396090cef24411afbb3faaf2b8d29ee191a28713df7fcc";

#[test]
fn tree_inner_node_golden() {
    check_object(
        "tree inner node",
        ObjectKind::Tree,
        &tree_inner(),
        TREE_INNER,
        TREE_INNER_ID,
    );
    let children = object::children(
        &id_hex(TREE_INNER_ID),
        ObjectKind::Tree,
        &bytes_of(TREE_INNER),
    )
    .unwrap();
    assert_eq!(children, vec![id(0xb1), id(0xb2)]);
}

fn commit() -> Commit {
    Commit {
        tree: id(0xc1),
        parents: vec![id(0xc2), id(0xc3)],
        author: Signature {
            name: "Ada".into(),
            email: "ada@example.org".into(),
            time: 1_700_000_000,
            tz_minutes: 60,
        },
        committer: Signature {
            name: "Bob".into(),
            email: "bob@example.org".into(),
            time: -1,
            tz_minutes: -300,
        },
        message: "Merge feature\n".into(),
    }
}

const COMMIT: &[&str] = &[
    "01",                                                               // format
    "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1", // tree
    "02",                                                               // 2 parents
    "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2",
    "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3",
    "03 416461",                         // author name "Ada"
    "0f 616461406578616d706c652e6f7267", // author email "ada@example.org"
    "80c49fd50c",                        // time 1700000000 (zigzag varint)
    "78",                                // tz_minutes 60 (zigzag varint)
    "03 426f62",                         // committer name "Bob"
    "0f 626f62406578616d706c652e6f7267", // committer email
    "01",                                // time -1 (zigzag)
    "d704",                              // tz_minutes -300 (zigzag)
    "0e 4d657267652066656174757265 0a",  // message "Merge feature\n"
];
const COMMIT_ID: &str = "b367d4d72d57d15538ee73a5b16518c5a8d7020e8c816eb626f18f52d7e7e347";

#[test]
fn commit_golden() {
    check_object("commit", ObjectKind::Commit, &commit(), COMMIT, COMMIT_ID);
    let children =
        object::children(&id_hex(COMMIT_ID), ObjectKind::Commit, &bytes_of(COMMIT)).unwrap();
    assert_eq!(children, vec![id(0xc1), id(0xc2), id(0xc3)]);
}

const TAG: &[&str] = &[
    "01",                                                               // format
    "d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1", // target
    "04 76312e30",                                                      // name "v1.0"
    "03 416461",                                                        // tagger name "Ada"
    "0f 616461406578616d706c652e6f7267", // tagger email "ada@example.org"
    "80c49fd50c",                        // time 1700000000 (zigzag varint)
    "78",                                // tz_minutes 60 (zigzag varint)
    "08 52656c656173650a",               // message "Release\n"
];
const TAG_ID: &str = "88e44933306174ba66e828b57deabe271453b2a9cf9ad5460fd28d514bc91a7e";

#[test]
fn tag_golden() {
    let tag = Tag {
        target: id(0xd1),
        name: "v1.0".into(),
        tagger: commit().author,
        message: "Release\n".into(),
    };
    check_object("tag", ObjectKind::Tag, &tag, TAG, TAG_ID);
    let children =
        object::children_marked(&id_hex(TAG_ID), ObjectKind::Tag, &bytes_of(TAG)).unwrap();
    assert_eq!(
        children,
        vec![(id(0xd1), false)],
        "a tag's commit is history, never file data"
    );
}

// ---------------------------------------------------------------------------
// splitting long lists: where nodes end decides every id above them

#[derive(Default)]
struct MemSink(Vec<(ObjectKind, ObjectId, Vec<u8>)>);

impl NodeSink for MemSink {
    fn put(&mut self, kind: ObjectKind, bytes: Vec<u8>) -> StoreResult<ObjectId> {
        let id = ObjectId::hash(kind, &bytes);
        self.0.push((kind, id, bytes));
        Ok(id)
    }
}

#[test]
fn list_split_parameters_are_fixed() {
    assert_eq!((FileList::FANOUT, FileList::MAX), (64, 256));
    assert_eq!((TreeList::FANOUT, TreeList::MAX), (256, 1024));
}

/// Ids whose first 4 bytes (LE u32) are 0 mod 64 end a file-list node:
/// [0x40; 32] (0x40404040 % 64 == 0) ends one, [0x11; 32] and [0x22; 32] do not.
const SPLIT_FILE_ROOT: &[&str] = &[
    "01",                                                               // format
    "01",                                                               // level 1
    "02",                                                               // 2 children
    "4bb2d95ca1ac86bd4179de4d5ba029ad67dcd885ee4bb27ba012b18ee650f420", // node [0x40]
    "80800c",                                                           // size 3 * 65536
    "2aeb68205b827bec7c1e0326537d348670506a891a8ce98a3d916395ef0a98b4", // node [0x11, 0x22]
    "808004",                                                           // size 65536
];
const SPLIT_FILE_ROOT_ID: &str = "9a1764190419b7b6af6d15bc6bd41be5c553dfd6e9cc676a8839524ca2bad4ec";

#[test]
fn file_list_split_golden() {
    // A short list is one level-0 node: the file node above.
    let mut sink = MemSink::default();
    let mut list = ListBuilder::<FileList>::new();
    for e in file_node().entries {
        list.push(&mut sink, e).unwrap();
    }
    let root = list.finish(&mut sink).unwrap();
    assert_eq!(
        (root.id.to_hex().as_str(), root.size),
        (FILE_NODE_ID, 65636)
    );
    assert_eq!(sink.0.len(), 1);

    let mut sink = MemSink::default();
    let mut list = ListBuilder::<FileList>::new();
    for (byte, size) in [(0x40, 3 * 65536), (0x11, 65536 - 100), (0x22, 100)] {
        list.push(&mut sink, NodeEntry { id: id(byte), size })
            .unwrap();
    }
    let root = list.finish(&mut sink).unwrap();
    assert_eq!(sink.0.len(), 3, "two level-0 nodes and their parent");
    let (kind, root_id, bytes) = sink.0.last().unwrap();
    assert_eq!((*kind, *root_id), (ObjectKind::FileNode, root.id));
    assert_golden("split file list root", bytes, SPLIT_FILE_ROOT);
    assert_eq!(root.id.to_hex(), SPLIT_FILE_ROOT_ID);
    assert_eq!(root.size, 4 * 65536);
}

/// Names whose BLAKE3 hash's first 4 bytes (LE u32) are 0 mod 256 end a
/// directory node: "m173" does (BLAKE3 starts 006e3fba), "a" and "z" do not.
const SPLIT_TREE_ROOT: &[&str] = &[
    "01",                                                               // format
    "01",                                                               // TreeNode::Inner
    "01",                                                               // level 1
    "02",                                                               // 2 children
    "8acd9cad9068adde061d8efea2172d46bb4e461f107bf322cabdf2dec501b921", // leaf ["a", "m173"]
    "03",                                                               // size 3
    "7307b1f5b7ed139791b0112014ae636090ef86fec744ef2b36f9a9219a945481", // leaf ["z"]
    "04",                                                               // size 4
];
const SPLIT_TREE_ROOT_ID: &str = "64b52652ab07b17c543db650ce6698ba80f869db07565395d0920f71a3a7504f";

#[test]
fn tree_list_split_golden() {
    let mut sink = MemSink::default();
    let mut list = ListBuilder::<TreeList>::new();
    for (name, size) in [("a", 1), ("m173", 2), ("z", 4)] {
        list.push(
            &mut sink,
            TreeEntry {
                name: name.into(),
                kind: EntryKind::File,
                id: id(0xd0),
                size,
            },
        )
        .unwrap();
    }
    let root = list.finish(&mut sink).unwrap();
    assert_eq!(sink.0.len(), 3, "two leaves and their parent");
    let (kind, root_id, bytes) = sink.0.last().unwrap();
    assert_eq!((*kind, *root_id), (ObjectKind::Tree, root.id));
    assert_golden("split directory root", bytes, SPLIT_TREE_ROOT);
    assert_eq!(root.id.to_hex(), SPLIT_TREE_ROOT_ID);
    assert_eq!(root.size, 7);
}

// ---------------------------------------------------------------------------
// packs and indexes

/// A zstd frame written by hand (so it does not depend on the zstd library's
/// compressor): single segment, content size 100, one RLE block of b'a'.
const ZSTD_100_A: &str = "28b52ffd 20 64 230300 61";

fn zstd_chunk() -> StoredObject {
    let payload = bytes_of(&[ZSTD_100_A]);
    StoredObject {
        id: ObjectId::hash(ObjectKind::Chunk, &[b'a'; 100]),
        kind: ObjectKind::Chunk,
        compression: 1,
        raw_len: 100,
        payload,
    }
}

/// A file node small enough (< 64 bytes) to be stored raw.
fn small_file_node() -> FileNode {
    FileNode {
        level: 0,
        entries: vec![NodeEntry {
            id: id_hex(HELLO_ID),
            size: 6,
        }],
    }
}

const SMALL_FILE_NODE_ID: &str = "858e9e9b1deb9afcf14fe2c1fb20612a3aad4392ce6f63d7eb12423c2e8dcdbd";
/// BLAKE3(0x01 || "a" * 100)
const A100_ID: &str = "1cb13b2aac830e0d772b4de7ec90d71adaf26cfdc3a902cc1293636a01c5ae4a";
/// BLAKE3(0x01 || "world\n")
const WORLD_ID: &str = "b59b2219106047a3c2d2da5a7cb0b93d2be3082c93f9786ded238a9aae42c2d5";

/// Pack A: the chunk "hello\n" (raw), a file node (raw), 100 × 'a' (zstd).
const PACK_A_CHECKSUM: &str = "6a7408bdfbb06bb2de2c9cc024d12093e6f9a7fe69882d46a31a6aac3be16098";
fn pack_a() -> Vec<&'static str> {
    vec![
        "444d565041434b00", // "DMVPACK\0"
        "03000000",         // version 3
        "00000000",         // reserved
        // record at 16
        "01 00 0000",   // kind chunk, compression none, reserved
        "06000000",     // raw_len 6
        "06000000",     // stored_len 6
        HELLO_ID,       // id
        "68656c6c6f0a", // "hello\n"
        // record at 66
        "02 00 0000", // kind file node, compression none
        "24000000",   // raw_len 36
        "24000000",   // stored_len 36
        SMALL_FILE_NODE_ID,
        "01 00 01", // format 1, level 0, 1 entry
        HELLO_ID,
        "06", // size 6
        // record at 146
        "01 01 0000", // kind chunk, compression zstd
        "64000000",   // raw_len 100
        "0a000000",   // stored_len 10
        A100_ID,
        ZSTD_100_A,
        // table of contents at 200, a record header without its id each: kind | compression | reserved | raw_len | stored_len
        "01 00 0000 06000000 06000000",
        "02 00 0000 24000000 24000000",
        "01 01 0000 64000000 0a000000",
        // footer
        "c800000000000000", // toc_offset 200
        "03000000",         // count 3
        "00000000",         // reserved
        "444d5650454e4400", // "DMVPEND\0"
        PACK_A_CHECKSUM, // BLAKE3 of the header, the record headers, the toc and the footer before this
    ]
}

/// Pack A as version 2 wrote it (the table of contents with ids and offsets,
/// the checksum over the header, table of contents and footer): still read.
const PACK_A_V2_CHECKSUM: &str = "d221685e6b1281ff8fbf7e4313b1a3c4ce22f091c9862a9bf16592ff84d79d8e";
fn pack_a_v2() -> Vec<&'static str> {
    let mut parts = pack_a();
    parts[1] = "02000000"; // version 2
    let toc = parts
        .iter()
        .position(|p| *p == "01 00 0000 06000000 06000000")
        .unwrap();
    parts.splice(
        toc..toc + 3,
        [
            // id | kind | compression | reserved | raw_len | stored_len | offset
            HELLO_ID,
            "01 00 0000 06000000 06000000 1000000000000000",
            SMALL_FILE_NODE_ID,
            "02 00 0000 24000000 24000000 4200000000000000",
            A100_ID,
            "01 01 0000 64000000 0a000000 9200000000000000",
        ],
    );
    *parts.last_mut().unwrap() = PACK_A_V2_CHECKSUM;
    parts
}

/// Pack B: the chunk "world\n".
const PACK_B_CHECKSUM: &str = "9a6c964a7d8a9aa968c520fc524c73781a35898032c53a5168c0de548732cc98";
fn pack_b() -> Vec<&'static str> {
    vec![
        "444d565041434b00 03000000 00000000", // header
        "01 00 0000 06000000 06000000",       // record header
        WORLD_ID,
        "776f726c640a",                                        // "world\n"
        "01 00 0000 06000000 06000000",                        // toc
        "4200000000000000 01000000 00000000 444d5650454e4400", // footer: toc at 66, 1 record
        PACK_B_CHECKSUM,
    ]
}

/// The index of pack A: ids sorted, so the order differs from the pack's.
const IDX_A_CHECKSUM: &str = "7862660203eb817ba8a3b2bce1060ef7d56a2ed5c547cf0ecb3b677cd41f8223";
fn idx_a(fanout_hex: &str) -> Vec<&str> {
    idx_of_pack_a(fanout_hex, PACK_A_CHECKSUM, IDX_A_CHECKSUM)
}
/// The index of pack A of version 2 (it differs only in the pack's name).
const IDX_A_V2_CHECKSUM: &str = "ac4d3763831a72d4b26a881a5e0593fe752789f2cb08afc7d2c94afe09de940c";
fn idx_a_v2(fanout_hex: &str) -> Vec<&str> {
    idx_of_pack_a(fanout_hex, PACK_A_V2_CHECKSUM, IDX_A_V2_CHECKSUM)
}
fn idx_of_pack_a<'a>(fanout_hex: &'a str, pack: &'a str, checksum: &'a str) -> Vec<&'a str> {
    vec![
        "444d564944580000", // "DMVIDX\0\0"
        "01000000",         // version 1
        "01000000",         // 1 pack
        "0300000000000000", // 3 objects
        pack,               // pack table
        fanout_hex,         // 256 × u32
        // ids, sorted
        A100_ID,
        HELLO_ID,
        SMALL_FILE_NODE_ID,
        // entries, in id order: pack u32 | kind | compression | reserved | offset u64 | raw_len | stored_len
        "00000000 01 01 0000 9200000000000000 64000000 0a000000",
        "00000000 01 00 0000 1000000000000000 06000000 06000000",
        "00000000 02 00 0000 4200000000000000 24000000 24000000",
        checksum, // BLAKE3 of everything before
    ]
}
/// First bytes of the ids in IDX_A, sorted.
const IDX_A_FIRSTS: &[u8] = &[0x1c, 0x60, 0x85];

/// The multi-pack index as dmv wrote it before filters: still read.
const MIDX_V1_CHECKSUM: &str = "cf19233a177079942172949570b894ca823a66fd4e06cc2b60bf32eebff2838d";
const MIDX_CHECKSUM: &str = "f5ce38d1b85f551650304f01d67619872bf8c85de34be64b84a0857a4e958700";
/// The filter of the four ids (crates/dmv-store/src/filter.rs): one 64-byte
/// block; each id sets the 8 bits given by 9-bit slices of its bytes 16..32
/// (little-endian), in the block that its bytes 8..16 pick.
const MIDX_FILTER: &str = "00102000200000000000000020000282000001101000001200002004000000100400000800080104000000280000000008000002000020008000c40400000000";
fn midx_v1(fanout_hex: &str) -> Vec<&str> {
    let mut parts = midx(fanout_hex);
    parts[0] = "444d564944580000 01000000"; // magic, version 1
    parts.truncate(parts.len() - 2); // no filter
    parts.push(MIDX_V1_CHECKSUM);
    parts
}
fn midx(fanout_hex: &str) -> Vec<&str> {
    vec![
        "444d564944580000 02000000", // magic, version 2: with a filter
        "02000000",                  // 2 packs
        "0400000000000000",          // 4 objects
        PACK_A_CHECKSUM,             // pack 0 (see canonical_two_pack_midx)
        PACK_B_CHECKSUM,             // pack 1
        fanout_hex,
        A100_ID,
        HELLO_ID,
        SMALL_FILE_NODE_ID,
        WORLD_ID,
        "00000000 01 01 0000 9200000000000000 64000000 0a000000", // in pack 0 (A)
        "00000000 01 00 0000 1000000000000000 06000000 06000000",
        "00000000 02 00 0000 4200000000000000 24000000 24000000",
        "01000000 01 00 0000 1000000000000000 06000000 06000000", // in pack 1 (B)
        MIDX_FILTER,
        MIDX_CHECKSUM,
    ]
}
const MIDX_FIRSTS: &[u8] = &[0x1c, 0x60, 0x85, 0xb5];

fn open_store(dir: &Path) -> Store {
    Store::create(dir).unwrap();
    Store::open(dir, ChunkParams::default(), 64 << 20).unwrap()
}

fn files_in(dir: &Path) -> HashMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The multi-pack index lists its packs in the order the directory listing
/// gave their indexes (file-system dependent). Puts a two-pack index into
/// the canonical order (pack table sorted) after checking its checksum, so
/// the golden bytes are comparable on every file system.
fn canonical_two_pack_midx(mut b: Vec<u8>) -> Vec<u8> {
    let body = b.len() - 32;
    assert_eq!(
        blake3::hash(&b[..body]).as_bytes(),
        &b[body..],
        "multi-pack index checksum"
    );
    assert_eq!(&b[12..16], &2u32.to_le_bytes());
    if b[24..56] > b[56..88] {
        swap_packs(&mut b);
    }
    b
}

/// Swaps the two entries of a multi-pack index's pack table, renumbers the
/// entries to match, and recomputes the checksum.
fn swap_packs(b: &mut [u8]) {
    let first: Vec<u8> = b[24..56].to_vec();
    b.copy_within(56..88, 24);
    b[56..88].copy_from_slice(&first);
    let count = u64::from_le_bytes(b[16..24].try_into().unwrap()) as usize;
    let entries = 24 + 64 + 1024 + count * 32;
    for i in 0..count {
        b[entries + i * 24] ^= 1; // pack number 0 <-> 1
    }
    let body = b.len() - 32;
    let sum = *blake3::hash(&b[..body]).as_bytes();
    b[body..].copy_from_slice(&sum);
}

#[test]
fn canonical_order_undoes_a_swapped_pack_table() {
    let golden = bytes_of(&midx(&fanout(MIDX_FIRSTS)));
    let mut swapped = golden.clone();
    swap_packs(&mut swapped);
    assert_ne!(swapped, golden);
    assert_eq!(canonical_two_pack_midx(swapped), golden);
    assert_eq!(canonical_two_pack_midx(golden.clone()), golden);
}

#[test]
fn pack_and_index_golden() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir.path().join("objects"));
    let mut s = store.begin_write().unwrap();
    assert_eq!(
        s.put_object(ObjectKind::Chunk, HELLO).unwrap().to_hex(),
        HELLO_ID
    );
    let node = object::encode(&small_file_node());
    assert_eq!(
        s.put_object(ObjectKind::FileNode, &node).unwrap().to_hex(),
        SMALL_FILE_NODE_ID
    );
    let z = zstd_chunk();
    assert_eq!(z.id.to_hex(), A100_ID);
    assert!(s.put_stored(&z).unwrap());
    s.finish().unwrap();
    drop(s);

    let packs = store.packs_dir().to_path_buf();
    let files = files_in(&packs);
    let mut names: Vec<&String> = files.keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            &format!("pack-{PACK_A_CHECKSUM}.idx"),
            &format!("pack-{PACK_A_CHECKSUM}.pack")
        ],
        "one pack, named after its checksum, and its index"
    );
    let pack = &files[&format!("pack-{PACK_A_CHECKSUM}.pack")];
    assert_golden("pack A", pack, &pack_a());
    assert_golden(
        "index of pack A",
        &files[&format!("pack-{PACK_A_CHECKSUM}.idx")],
        &idx_a(&fanout(IDX_A_FIRSTS)),
    );

    // A second pack, then the multi-pack index over both.
    let mut s = store.begin_write().unwrap();
    assert_eq!(
        s.put_object(ObjectKind::Chunk, b"world\n")
            .unwrap()
            .to_hex(),
        WORLD_ID
    );
    s.finish().unwrap();
    drop(s);
    let files = files_in(&packs);
    assert!(
        files.contains_key(&format!("pack-{PACK_B_CHECKSUM}.pack")),
        "{:?}",
        files.keys()
    );
    assert_golden(
        "pack B",
        &files[&format!("pack-{PACK_B_CHECKSUM}.pack")],
        &pack_b(),
    );
    store.write_multi_pack_index().unwrap();
    let midx_bytes = std::fs::read(packs.join(dmv_store::MULTI_PACK_INDEX)).unwrap();
    assert_golden(
        "multi-pack index",
        &canonical_two_pack_midx(midx_bytes),
        &midx(&fanout(MIDX_FIRSTS)),
    );
}

/// An object of the golden packs: what reading it must give.
struct Expected {
    id: &'static str,
    pack: &'static str,
    kind: ObjectKind,
    content: Vec<u8>,
    compression: u8,
    offset: u64,
    stored_len: u32,
}

impl Expected {
    fn check(&self, store: &Store) {
        let id = id_hex(self.id);
        assert_eq!(store.read(&id).unwrap(), (self.kind, self.content.clone()));
        let loc = store.locate(&id).unwrap().unwrap();
        assert_eq!(loc.pack.to_hex(), self.pack);
        let e = loc.entry;
        assert_eq!(
            (
                e.id,
                e.kind,
                e.compression,
                e.offset,
                e.raw_len,
                e.stored_len
            ),
            (
                id,
                self.kind,
                self.compression,
                self.offset,
                self.content.len() as u32,
                self.stored_len
            )
        );
    }
}

/// The objects of pack A as the golden vectors describe them.
fn pack_a_objects(pack: &'static str) -> Vec<Expected> {
    let e = |id, kind, content, compression, offset, stored_len| Expected {
        id,
        pack,
        kind,
        content,
        compression,
        offset,
        stored_len,
    };
    vec![
        e(HELLO_ID, ObjectKind::Chunk, HELLO.to_vec(), 0, 16, 6),
        e(
            SMALL_FILE_NODE_ID,
            ObjectKind::FileNode,
            object::encode(&small_file_node()),
            0,
            66,
            36,
        ),
        e(A100_ID, ObjectKind::Chunk, vec![b'a'; 100], 1, 146, 10),
    ]
}

#[test]
fn golden_pack_and_index_decode() {
    let fanout_hex = fanout(IDX_A_FIRSTS);
    let versions: [(Vec<&str>, Vec<&str>, &str); 2] = [
        (pack_a(), idx_a(&fanout_hex), PACK_A_CHECKSUM),
        (pack_a_v2(), idx_a_v2(&fanout_hex), PACK_A_V2_CHECKSUM),
    ];
    for (pack, idx, checksum) in versions {
        let dir = tempfile::tempdir().unwrap();
        let objects = dir.path().join("objects");
        Store::create(&objects).unwrap();
        let packs = objects.join("packs");
        std::fs::write(packs.join(format!("pack-{checksum}.pack")), bytes_of(&pack)).unwrap();
        std::fs::write(packs.join(format!("pack-{checksum}.idx")), bytes_of(&idx)).unwrap();
        let store = Store::open(&objects, ChunkParams::default(), 64 << 20).unwrap();
        for e in pack_a_objects(checksum) {
            e.check(&store);
        }
        let report = store.verify_packs(&Tally::silent()).unwrap();
        assert!(report.is_clean(), "{checksum}: {report:?}");
        dmv_store::verify_pack_index(
            &packs.join(format!("pack-{checksum}.idx")),
            &id_hex(checksum),
        )
        .unwrap();
        // Its index lost, the pack is indexed again from its table of contents, byte for byte as before.
        std::fs::remove_file(packs.join(format!("pack-{checksum}.idx"))).unwrap();
        store.salvage().unwrap();
        assert_eq!(
            std::fs::read(packs.join(format!("pack-{checksum}.idx"))).unwrap(),
            bytes_of(&idx),
            "{checksum}"
        );
    }
}

#[test]
fn golden_multi_pack_index_decodes() {
    for version in [midx_v1, midx] {
        multi_pack_index_decodes(&version(&fanout(MIDX_FIRSTS)));
    }
}

fn multi_pack_index_decodes(golden: &[&str]) {
    let bytes = bytes_of(golden);
    let body = bytes.len() - 32;
    assert_eq!(
        blake3::hash(&bytes[..body]).as_bytes(),
        &bytes[body..],
        "the golden's own checksum"
    );
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    Store::create(&objects).unwrap();
    let packs = objects.join("packs");
    std::fs::write(
        packs.join(format!("pack-{PACK_A_CHECKSUM}.pack")),
        bytes_of(&pack_a()),
    )
    .unwrap();
    std::fs::write(
        packs.join(format!("pack-{PACK_B_CHECKSUM}.pack")),
        bytes_of(&pack_b()),
    )
    .unwrap();
    std::fs::write(packs.join(dmv_store::MULTI_PACK_INDEX), bytes_of(golden)).unwrap();
    // Empty per-pack indexes: the store only checks that they exist when the
    // multi-pack index covers their packs, and would fail to open them
    // otherwise. So every lookup below goes through the golden multi-pack index.
    std::fs::write(packs.join(format!("pack-{PACK_A_CHECKSUM}.idx")), b"").unwrap();
    std::fs::write(packs.join(format!("pack-{PACK_B_CHECKSUM}.idx")), b"").unwrap();
    let store = Store::open(&objects, ChunkParams::default(), 64 << 20).unwrap();
    let mut all = pack_a_objects(PACK_A_CHECKSUM);
    all.push(Expected {
        id: WORLD_ID,
        pack: PACK_B_CHECKSUM,
        kind: ObjectKind::Chunk,
        content: b"world\n".to_vec(),
        compression: 0,
        offset: 16,
        stored_len: 6,
    });
    for e in all {
        e.check(&store);
    }
}
