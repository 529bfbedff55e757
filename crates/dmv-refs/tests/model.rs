//! Random transactions against a BTreeMap model, with reopens and
//! compactions in between.

use std::collections::BTreeMap;

use dmv_refs::{Expect, Options, RefError, RefStore, RefValue};
use proptest::prelude::*;

const NAMES: &[&str] = &[
    "a",
    "a/b",
    "a/b/c",
    "a/bc",
    "b",
    "refs/heads/main",
    "refs/heads/main/x",
    "refs/tags/v1",
    "z",
    "é/ü",
];

#[derive(Debug, Clone)]
struct Op {
    name: usize,
    new: Option<u8>,
    /// 0: Any, 1: the correct current value, 2: a wrong one.
    expect: u8,
}

fn op() -> impl Strategy<Value = Op> {
    (
        0..NAMES.len(),
        proptest::option::of(any::<u8>()),
        prop_oneof![3 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)],
    )
        .prop_map(|(name, new, expect)| Op { name, new, expect })
}

#[derive(Debug, Clone)]
struct Txn {
    ops: Vec<Op>,
    reopen: bool,
    compact: bool,
}

fn txn() -> impl Strategy<Value = Txn> {
    (
        proptest::collection::vec(op(), 1..5),
        any::<bool>(),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(ops, reopen, compact)| Txn {
            ops,
            reopen,
            compact,
        })
}

fn val(b: u8) -> RefValue {
    [b; 32]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20, ..ProptestConfig::default() })]
    #[test]
    fn random_transactions_match_model(txns in proptest::collection::vec(txn(), 1..30), auto in any::<bool>(), inline in prop_oneof![Just(0u64), Just(700), Just(4096)]) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("refs");
        RefStore::init(&dir).unwrap();
        let opts = Options { auto_compact: auto, inline_limit: inline, ..Options::default() };
        let mut store = RefStore::open(&dir, opts.clone()).unwrap();
        let mut model: BTreeMap<&str, RefValue> = BTreeMap::new();
        let mut logs: BTreeMap<&str, usize> = BTreeMap::new();

        for (i, t) in txns.iter().enumerate() {
            let mut tx = store.transaction();
            let mut used = Vec::new();
            let mut doomed = false;
            for o in &t.ops {
                let name = NAMES[o.name];
                if used.contains(&name) {
                    let dup = tx.update(name, Expect::Any, None).err();
                    let is_dup = matches!(dup, Some(RefError::DuplicateUpdate { .. }));
                    prop_assert!(is_dup);
                    continue;
                }
                used.push(name);
                let cur = model.get(name).copied();
                let expect = match (o.expect, cur) {
                    (0, _) => Expect::Any,
                    (1, Some(v)) => Expect::Value(v),
                    (1, None) => Expect::Absent,
                    (_, Some(v)) if v == val(0xee) => Expect::Absent,
                    _ => Expect::Value(val(0xee)),
                };
                doomed |= o.expect == 2;
                tx.update(name, expect, o.new.map(val)).unwrap();
            }
            let res = tx.commit("P <p@x>", (i as i64, 0), "prop");
            if doomed {
                let changed = matches!(res, Err(RefError::Changed { .. }));
                prop_assert!(changed, "{:?}", res);
            } else {
                prop_assert!(res.is_ok(), "{:?}", res);
                for o in &t.ops {
                    let name = NAMES[o.name];
                    if !used.contains(&name) { continue; }
                    used.retain(|n| *n != name);
                    let old = model.get(name).copied();
                    if old.is_some() || o.new.is_some() {
                        *logs.entry(name).or_default() += 1;
                    }
                    match o.new {
                        Some(b) => { model.insert(name, val(b)); }
                        None => { model.remove(name); }
                    }
                }
            }
            if t.compact {
                store.compact_all().unwrap();
                prop_assert!(store.table_count().unwrap() <= 1);
            }
            if t.reopen {
                // Every other reopen writes no inline table: it reads them, and folds one it finds.
                let inline_limit = if i % 2 == 0 { inline } else { 0 };
                store = RefStore::open(&dir, Options { inline_limit, ..opts.clone() }).unwrap();
            }
        }

        let store = RefStore::open(&dir, opts).unwrap();
        let got = store.list("").unwrap();
        let want: Vec<(String, RefValue)> = model.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        prop_assert_eq!(&got, &want);
        for n in NAMES {
            prop_assert_eq!(store.get(n).unwrap(), model.get(n).copied());
            prop_assert_eq!(store.reflog(n).unwrap().len(), logs.get(n).copied().unwrap_or(0));
        }
        let sub: Vec<_> = want.iter().filter(|(k, _)| k.starts_with("a/b")).cloned().collect();
        prop_assert_eq!(store.list("a/b").unwrap(), sub);
        let names: Vec<String> = logs.keys().map(|s| s.to_string()).collect();
        prop_assert_eq!(store.reflog_names().unwrap(), names);
        store.verify().unwrap();
        store.compact_all().unwrap();
        prop_assert_eq!(store.list("").unwrap(), want);
    }
}
