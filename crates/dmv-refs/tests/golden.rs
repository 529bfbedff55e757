//! Golden vectors for the ref table format (docs/refs-format.md): two
//! transactions written through the public API with fixed names, values,
//! times and messages, their exact table bytes checked in as hex, and the
//! golden bytes read back. A changed magic, block layout, value type, key
//! encoding, log value or checksum fails here. If a change is intended, it is
//! a format change: give tables a new magic and replace these vectors.

use std::path::Path;

use dmv_refs::{internals, Expect, Options, RefStore, ReflogEntry};
use dmv_testkit::golden::{assert_golden, bytes_of};

const MAIN: &str = "refs/heads/main";
const TAG: &str = "refs/tags/v1";
const ADA: &str = "Ada <ada@example.org>";
const BOB: &str = "Bob <bob@example.org>";
const T1: (i64, i16) = (1_700_000_000, 60);
const T2: (i64, i16) = (1_700_000_100, -300);

/// Transaction 1 (update index 1): creates MAIN = [0x11; 32] and TAG = [0x22; 32].
const TABLE_1: &[&str] = &[
    "444d565254414231", // "DMVRTAB1"
    // data block at 8
    "64",       // 'd'
    "00000131", // block length 305 (u32 BE)
    // record: shared | suffix_len | value type | value_len | key suffix | value
    "00 19 03 46", // shared 0, 25-byte key, log, 70-byte value
    "6c 726566732f68656164732f6d61696e 00 fffffffffffffffe", // 'l' "refs/heads/main" NUL !1
    "02",          // flags: new value only (a creation)
    "1111111111111111111111111111111111111111111111111111111111111111", // new
    "000000006553f100", // time 1700000000 (i64 BE)
    "003c",        // tz +60 minutes (i16 BE)
    "15 416461203c616461406578616d706c652e6f72673e", // who "Ada <ada@example.org>"
    "04 696e6974", // message "init"
    "06 10 03 46", // shares "lrefs/" with the key before
    "746167732f763100fffffffffffffffe", // "tags/v1" NUL !1
    "02",
    "2222222222222222222222222222222222222222222222222222222222222222",
    "000000006553f100 003c",
    "15 416461203c616461406578616d706c652e6f72673e",
    "04 696e6974",
    "00 10 01 20",                       // shared 0, 16-byte key, ref, 32-byte value
    "72 726566732f68656164732f6d61696e", // 'r' "refs/heads/main"
    "1111111111111111111111111111111111111111111111111111111111111111",
    "06 07 01 20",    // shares "rrefs/"
    "746167732f7631", // "tags/v1"
    "2222222222222222222222222222222222222222222222222222222222222222",
    "00000005",         // restart offsets: 5
    "00000001",         // 1 restart
    "43926a29c61efeba", // check8 of the block
    // index block: one entry per data block, key = its last key
    "69",                         // 'i'
    "00000027",                   // block length 39
    "00 0d 04 01",                // shared 0, 13-byte key, index entry, 1-byte value
    "72726566732f746167732f7631", // "rrefs/tags/v1"
    "08",                         // child block offset 8 (varint)
    "00000005 00000001",
    "b7bfc770039860bb", // check8
    // footer
    "444d565254454e44", // "DMVRTEND"
    "0000000000000139", // data_end 313
    "0000000000000139", // index_root 313
    "0000000000000002", // ref records
    "0000000000000002", // log records
    "0000000000000001", // min update index
    "0000000000000001", // max update index
    "0bff3bc99a1510c7", // check8 of the footer so far
    "8693306422eb4db2a8bb9ebb0a0980c159dfb3ddfa067f40a1f3651c541a74f3", // BLAKE3 of the file before
];

/// Transaction 2 (update index 2): MAIN [0x11; 32] -> [0x33; 32], TAG deleted.
const TABLE_2: &[&str] = &[
    "444d565254414231",                                                 // "DMVRTAB1"
    "64 00000131",                                                      // data block, length 305
    "00 19 03 66",                                                      // log, 102-byte value
    "6c 726566732f68656164732f6d61696e 00 fffffffffffffffd",            // 'l' MAIN NUL !2
    "03",                                                               // flags: old and new value
    "1111111111111111111111111111111111111111111111111111111111111111", // old
    "3333333333333333333333333333333333333333333333333333333333333333", // new
    "000000006553f164",                                                 // time 1700000100
    "fed4",                                                             // tz -300
    "15 426f62203c626f62406578616d706c652e6f72673e", // who "Bob <bob@example.org>"
    "04 6d6f7665",                                   // message "move"
    "06 10 03 46",
    "746167732f763100fffffffffffffffd", // "tags/v1" NUL !2
    "01",                               // flags: old value only (a deletion)
    "2222222222222222222222222222222222222222222222222222222222222222", // old
    "000000006553f164 fed4",
    "15 426f62203c626f62406578616d706c652e6f72673e",
    "04 6d6f7665",
    "00 10 01 20",
    "72 726566732f68656164732f6d61696e",
    "3333333333333333333333333333333333333333333333333333333333333333",
    "06 07 02 00", // shares "rrefs/", tombstone, empty value
    "746167732f7631",
    "00000005 00000001",
    "c98dbdd737ad0f23", // check8
    "69 00000027",      // index block, length 39
    "00 0d 04 01 72726566732f746167732f7631 08",
    "00000005 00000001",
    "b7bfc770039860bb", // check8 (the same index block as table 1)
    "444d565254454e44",
    "0000000000000139", // data_end 313
    "0000000000000139", // index_root 313
    "0000000000000002", // ref records (a value and a tombstone)
    "0000000000000002", // log records
    "0000000000000002", // min update index
    "0000000000000002", // max update index
    "9577369c9ac94534", // check8
    "3c9d59251d2eb267de99af0d625b6a4ebc6913ba74a8c7c369138ff0c9f9d44d", // BLAKE3
];

fn no_compaction(dir: &Path) -> RefStore {
    RefStore::init(dir).unwrap();
    RefStore::open(
        dir,
        Options {
            auto_compact: false,
            ..Options::default()
        },
    )
    .unwrap()
}

#[test]
fn ref_tables_golden() {
    let tmp = tempfile::tempdir().unwrap();
    let store = no_compaction(&tmp.path().join("refs"));
    let mut tx = store.transaction();
    tx.update(MAIN, Expect::Absent, Some([0x11; 32])).unwrap();
    tx.update(TAG, Expect::Absent, Some([0x22; 32])).unwrap();
    tx.commit(ADA, T1, "init").unwrap();
    let mut tx = store.transaction();
    tx.update(MAIN, Expect::Value([0x11; 32]), Some([0x33; 32]))
        .unwrap();
    tx.update(TAG, Expect::Value([0x22; 32]), None).unwrap();
    tx.commit(BOB, T2, "move").unwrap();

    let paths = store.table_paths().unwrap();
    assert_eq!(paths.len(), 2);
    // Names are "<min>-<max>-<random>.ref"; only the update indexes are fixed.
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names[0].starts_with("00000001-00000001-") && names[1].starts_with("00000002-00000002-"),
        "{names:?}"
    );
    assert_golden(
        "table of transaction 1",
        &std::fs::read(&paths[0]).unwrap(),
        TABLE_1,
    );
    assert_golden(
        "table of transaction 2",
        &std::fs::read(&paths[1]).unwrap(),
        TABLE_2,
    );
}

fn entry(
    name: &str,
    old: Option<u8>,
    new: Option<u8>,
    who: &str,
    when: (i64, i16),
    message: &str,
) -> ReflogEntry {
    ReflogEntry {
        name: name.into(),
        old: old.map(|b| [b; 32]),
        new: new.map(|b| [b; 32]),
        who: who.into(),
        time: when.0,
        tz_minutes: when.1,
        message: message.into(),
    }
}

/// A ref directory holding the golden tables (and nothing written by the code under test).
fn golden_store(dir: &Path, tables: &[&[&str]]) -> RefStore {
    std::fs::create_dir_all(dir).unwrap();
    let mut list = String::from("# golden tables\n");
    for (i, t) in tables.iter().enumerate() {
        let name = format!("{:08x}-{:08x}-00000000.ref", i + 1, i + 1);
        std::fs::write(dir.join(&name), bytes_of(t)).unwrap();
        list.push_str(&name);
        list.push('\n');
    }
    std::fs::write(dir.join("tables.list"), list).unwrap();
    RefStore::open(
        dir,
        Options {
            auto_compact: false,
            ..Options::default()
        },
    )
    .unwrap()
}

#[test]
fn golden_ref_tables_decode() {
    assert_eq!(internals::check_table_bytes(bytes_of(TABLE_1)).unwrap(), 4);
    assert_eq!(internals::check_table_bytes(bytes_of(TABLE_2)).unwrap(), 4);

    let tmp = tempfile::tempdir().unwrap();
    let one = golden_store(&tmp.path().join("one"), &[TABLE_1]);
    one.verify().unwrap();
    assert_eq!(
        one.list("").unwrap(),
        vec![
            (MAIN.to_string(), [0x11; 32]),
            (TAG.to_string(), [0x22; 32])
        ]
    );
    assert_eq!(
        one.reflog(MAIN).unwrap(),
        vec![entry(MAIN, None, Some(0x11), ADA, T1, "init")]
    );

    let both = golden_store(&tmp.path().join("both"), &[TABLE_1, TABLE_2]);
    both.verify().unwrap();
    assert_eq!(both.list("").unwrap(), vec![(MAIN.to_string(), [0x33; 32])]);
    assert_eq!(
        both.get(TAG).unwrap(),
        None,
        "the tombstone hides the older value"
    );
    assert_eq!(
        both.reflog(MAIN).unwrap(),
        vec![
            entry(MAIN, Some(0x11), Some(0x33), BOB, T2, "move"),
            entry(MAIN, None, Some(0x11), ADA, T1, "init")
        ]
    );
    assert_eq!(
        both.reflog(TAG).unwrap(),
        vec![
            entry(TAG, Some(0x22), None, BOB, T2, "move"),
            entry(TAG, None, Some(0x22), ADA, T1, "init")
        ]
    );
    assert_eq!(
        both.reflog_names().unwrap(),
        vec![MAIN.to_string(), TAG.to_string()]
    );
}
