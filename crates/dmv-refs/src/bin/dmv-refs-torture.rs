//! Crash-test driver for dmv-refs. Transaction `i` is a pure function of
//! `i`, and ref `torture/counter` (updated by compare-and-swap in every
//! transaction) records the last committed `i`; so after any kill the
//! expected state is `model(counter)` and can be checked exactly.
//!
//!   dmv-refs-torture DIR init
//!   dmv-refs-torture DIR run N     # N transactions (0 = forever); prints "committed i",
//!                                  # and "lost i" when another runner committed i first
//!   dmv-refs-torture DIR check     # verify + compare with the model; prints "ok i"
//!
//! Several `run`s may share DIR: a loser of the counter CAS simply builds the
//! next transaction, so the model still holds. With `DMV_TORTURE_START=FILE`
//! set, `run` opens the store and then waits until FILE exists, so a test can
//! start several runners at the same moment.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::exit;

use dmv_refs::{Expect, Options, RefError, RefStore, RefValue};

const COUNTER: &str = "torture/counter";

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn value(i: u64, k: u64) -> RefValue {
    let mut v = [0u8; 32];
    for (j, c) in v.chunks_mut(8).enumerate() {
        c.copy_from_slice(&mix(i.wrapping_mul(1_000_003) ^ (k << 8) ^ j as u64).to_le_bytes());
    }
    v
}

fn counter_value(i: u64) -> RefValue {
    let mut v = value(i, u64::MAX);
    v[..8].copy_from_slice(&i.to_be_bytes());
    v
}

/// Updates of transaction `i` besides the counter.
fn ops(i: u64) -> Vec<(String, Option<RefValue>)> {
    let mut h = mix(i);
    let m = 1 + h % 6;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for j in 0..m {
        h = mix(h ^ j);
        let k = h % 40;
        // Both `t/k` and `t/k/x` exist at times: names are not paths.
        let name = if (h >> 8).is_multiple_of(3) {
            format!("t/{k}/x")
        } else {
            format!("t/{k}")
        };
        if !seen.insert(name.clone()) {
            continue;
        }
        let del = (h >> 16).is_multiple_of(4);
        out.push((name, if del { None } else { Some(value(i, k)) }));
    }
    if i.is_multiple_of(25) {
        for j in 0..300 {
            out.push((format!("bulk/{}/{j}", i % 100), Some(value(i, j))));
        }
    }
    out
}

fn model(c: u64) -> BTreeMap<String, RefValue> {
    let mut m = BTreeMap::new();
    for i in 1..=c {
        for (n, v) in ops(i) {
            match v {
                Some(v) => m.insert(n, v),
                None => m.remove(&n),
            };
        }
    }
    if c > 0 {
        m.insert(COUNTER.to_string(), counter_value(c));
    }
    m
}

fn counter(store: &RefStore) -> Result<u64, RefError> {
    Ok(store.get(COUNTER)?.map_or(0, |v| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&v[..8]);
        u64::from_be_bytes(b)
    }))
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("dmv-refs-torture: {msg}");
    exit(1)
}

fn run(dir: &Path, n: u64) -> Result<(), RefError> {
    // DMV_TORTURE_INLINE: the largest table that travels inside tables.list (default 0: none).
    let inline_limit = std::env::var("DMV_TORTURE_INLINE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let store = RefStore::open(
        dir,
        Options {
            inline_limit,
            ..Options::default()
        },
    )?;
    let mut done = 0;
    let stdout = std::io::stdout();
    if let Some(start) = std::env::var_os("DMV_TORTURE_START") {
        let start = Path::new(&start);
        while !start.exists() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    while n == 0 || done < n {
        let c = counter(&store)?;
        let i = c + 1;
        let mut tx = store.transaction();
        let expect = if c == 0 {
            Expect::Absent
        } else {
            Expect::Value(counter_value(c))
        };
        tx.update(COUNTER, expect, Some(counter_value(i)))?;
        for (name, v) in ops(i) {
            tx.update(&name, Expect::Any, v)?;
        }
        let when = (1_700_000_000 + i as i64, 60);
        match tx.commit("Torture <torture@example.com>", when, &format!("txn {i}")) {
            Ok(()) => {
                let mut out = stdout.lock();
                let _ = writeln!(out, "committed {i}");
                let _ = out.flush();
                done += 1;
                if i % 40 == 0 {
                    store.compact_all()?;
                }
            }
            // Another runner committed transaction i first; build i+1.
            Err(RefError::Changed { .. }) => {
                let mut out = stdout.lock();
                let _ = writeln!(out, "lost {i}");
                let _ = out.flush();
                continue;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn check(dir: &Path) -> Result<(), String> {
    let store = RefStore::open(dir, Options::default()).map_err(|e| e.to_string())?;
    store.verify().map_err(|e| e.to_string())?;
    let c = counter(&store).map_err(|e| e.to_string())?;
    let want = model(c);
    let got: BTreeMap<String, RefValue> = store
        .list("")
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    if got != want {
        let missing: Vec<_> = want
            .keys()
            .filter(|k| !got.contains_key(*k))
            .take(5)
            .collect();
        let extra: Vec<_> = got
            .keys()
            .filter(|k| !want.contains_key(*k))
            .take(5)
            .collect();
        let differ: Vec<_> = want
            .iter()
            .filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v))
            .map(|x| x.0)
            .take(5)
            .collect();
        return Err(format!("state after counter {c} differs from the model: missing {missing:?}, extra {extra:?}, different {differ:?}"));
    }
    let log = store.reflog(COUNTER).map_err(|e| e.to_string())?;
    if log.len() as u64 != c {
        return Err(format!(
            "counter reflog has {} entries, expected {c}",
            log.len()
        ));
    }
    if let Some(top) = log.first() {
        if top.message != format!("txn {c}") || top.new != Some(counter_value(c)) {
            return Err(format!("newest counter reflog entry is {:?}", top.message));
        }
    }
    println!("ok {c}");
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        fail("usage: dmv-refs-torture DIR (init | run N | check)");
    }
    let dir = Path::new(&args[1]);
    match args[2].as_str() {
        "init" => {
            RefStore::init(dir).unwrap_or_else(|e| fail(e));
        }
        "run" => {
            let n = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
            run(dir, n).unwrap_or_else(|e| fail(e));
        }
        "check" => check(dir).unwrap_or_else(|e| fail(e)),
        other => fail(format!("unknown mode {other}")),
    }
}
