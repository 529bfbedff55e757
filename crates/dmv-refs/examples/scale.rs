//! Measures the scale targets: `cargo run --release -p dmv-refs --example scale [N]`.
use std::time::Instant;

use dmv_refs::{Expect, Options, RefStore};

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("refs");
    let s = RefStore::init(&dir).unwrap();
    let s = RefStore::open(s.dir(), Options::default()).unwrap();

    let t = Instant::now();
    let mut tx = s.transaction();
    for i in 0..n {
        let mut v = [0u8; 32];
        v[..4].copy_from_slice(&i.to_be_bytes());
        tx.update(
            &format!("refs/heads/feature/branch-{i:08}"),
            Expect::Absent,
            Some(v),
        )
        .unwrap();
    }
    let built = t.elapsed();
    tx.commit("Bench <b@x>", (0, 0), "import").unwrap();
    let size = std::fs::metadata(&s.table_paths().unwrap()[0])
        .unwrap()
        .len();
    println!(
        "create {n} refs: {:?} (building the batch {:?}), table {} MB",
        t.elapsed(),
        built,
        size >> 20
    );

    let t = Instant::now();
    let all = s.list("").unwrap();
    println!("list {}: {:?}", all.len(), t.elapsed());

    let t = Instant::now();
    for i in (0..n).step_by((n / 1000).max(1) as usize) {
        s.get(&format!("refs/heads/feature/branch-{i:08}"))
            .unwrap()
            .unwrap();
    }
    println!("1000 gets: {:?}", t.elapsed());

    let t = Instant::now();
    let mut tx = s.transaction();
    tx.update("refs/heads/feature/branch-00000007", Expect::Any, None)
        .unwrap();
    tx.commit("Bench <b@x>", (0, 0), "delete").unwrap();
    let paths = s.table_paths().unwrap();
    println!(
        "delete one: {:?}, tables {}, new table {} bytes",
        t.elapsed(),
        paths.len(),
        std::fs::metadata(paths.last().unwrap()).unwrap().len()
    );

    let t = Instant::now();
    s.verify().unwrap();
    println!("verify: {:?}", t.elapsed());
    let t = Instant::now();
    s.compact_all().unwrap();
    println!("compact_all: {:?}", t.elapsed());
    let t = Instant::now();
    println!(
        "reflog_names {}: {:?}",
        s.reflog_names().unwrap().len(),
        t.elapsed()
    );
}
