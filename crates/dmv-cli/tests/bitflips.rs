//! Flipped bits: one random bit at a time, in every kind of file a
//! repository holds. `fsck --full` must report every flip in a file whose
//! bytes all carry meaning (checksummed formats), and no command may panic
//! or print a file's content other than what was committed.
//!
//! The suite flips `DMV_FLIPS_PER_KIND` bits per kind (default 8);
//! `scripts/faults` runs 200 per kind and writes the figures to
//! RELIABILITY.md (from the JSON this test writes to
//! `$DMV_FAULTS_REPORT_DIR/bitflips.json` when that is set).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::remote::commit_all;
use common::*;

/// What a flip in a kind of file must do.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// Every byte is covered by a checksum: fsck must report every flip.
    Detected,
    /// Text read strictly (every byte counts) that names files which must
    /// exist: fsck must report every flip.
    Strict,
    /// Text a person may read or edit (no checksum, as in git): fsck checks
    /// its syntax and what it names; a flip to another valid value can pass.
    Validated,
    /// A cache checked against what it was made from: a flip makes it
    /// stale (the slow path runs), never wrong.
    Cache,
    /// Bytes no reader trusts: who held a lock last and the comment line
    /// of the ref table list (both for people debugging).
    NoMeaning,
}

/// The kind of `.dmv` file at `rel` (`first_line_len`: its first line's
/// length), at byte `at` for packs (by region), and what a flip there must do.
fn kind_of(
    rel: &str,
    at: usize,
    first_line_len: usize,
    pack_regions: &BTreeMap<String, (usize, usize)>,
) -> Option<(String, Expect)> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let kind = |k: &str, e: Expect| Some((k.to_string(), e));
    if name.ends_with(".pack") {
        let (toc, len) = pack_regions[rel];
        return match at {
            a if a < 16 => kind("pack header", Expect::Detected),
            a if a < toc => kind("pack payload", Expect::Detected),
            a if a < len - 32 - 24 => kind("pack table of contents", Expect::Detected),
            _ => kind("pack footer", Expect::Detected),
        };
    }
    match name {
        n if n.ends_with(".idx") => kind("pack index", Expect::Detected),
        "multi-pack-index" => kind("multi-pack index", Expect::Detected),
        n if n.ends_with(".ref") => kind("ref table (refs and reflog)", Expect::Detected),
        "tables.list" if at < first_line_len => kind("ref table list: comment", Expect::NoMeaning),
        "tables.list" => kind("ref table list", Expect::Strict),
        "dirstate" => kind("dirstate", Expect::Detected),
        "dirstate-tree" => kind("dirstate tree mark", Expect::Cache),
        "locations" => kind("location log", Expect::Detected),
        "locations.journal" => kind("location journal", Expect::Detected),
        "config" => kind("config", Expect::Detected),
        "HEAD" => kind("HEAD", Expect::Validated),
        "requires" => kind("requires", Expect::Validated),
        "replica-id" => kind("replica id", Expect::Detected),
        "replicas" => kind("known replicas", Expect::Detected),
        "wlock" => kind("lock holder", Expect::NoMeaning),
        _ => None,
    }
}

/// xorshift64*: the flips are the same in every run of a seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Puts `.dmv` back exactly as `saved` (a command may have rewritten or added files).
fn restore(dmv: &Path, saved: &BTreeMap<String, Vec<u8>>) {
    let now = file_bytes(dmv);
    for (rel, bytes) in &now {
        match saved.get(rel) {
            None => std::fs::remove_file(dmv.join(rel)).unwrap(),
            Some(b) if b != bytes => std::fs::write(dmv.join(rel), b).unwrap(),
            Some(_) => {}
        }
    }
    for (rel, bytes) in saved {
        if !now.contains_key(rel) {
            std::fs::write(dmv.join(rel), bytes).unwrap();
        }
    }
}

/// A repository with every kind of file: packs with a chunked file and small
/// ones, per-pack indexes and a multi-pack index, refs with a reflog, a tag
/// and two branches, a dirstate, and a location log after a push (and
/// its journal after a second one).
fn specimen(t: &Path) -> PathBuf {
    let r = t.join("r");
    std::fs::create_dir_all(r.join("sub")).unwrap();
    dmv(&r, &["init"]);
    write_noise(&r.join("big.raw"), 700 << 10, 1);
    std::fs::write(r.join("a.txt"), "hello\n").unwrap();
    std::fs::write(r.join("sub/b.txt"), "sub\n").unwrap();
    commit_all(&r, "one");
    std::fs::write(r.join("a.txt"), "hello again\n").unwrap();
    commit_all(&r, "two");
    dmv(&r, &["tag", "v1"]);
    dmv(&r, &["branch", "side"]);
    dmv(t, &["init", "--bare", "hub"]);
    dmv(
        &r,
        &["remote", "add", "hub", t.join("hub").to_str().unwrap()],
    );
    dmv(&r, &["push", "hub", "main"]);
    dmv(&r, &["gc"]);
    std::fs::write(r.join("sub/c.txt"), "after gc\n").unwrap();
    commit_all(&r, "three");
    // The hub holds everything: a repair has a source for all of it.
    dmv(&r, &["push", "hub", "main", "side"]);
    // A push merges the hub's log into ours; a `get` notes what it learnt in the journal, as here.
    let repo = dmv_repo::Repository::open(&r).unwrap();
    let key = dmv_repo::store::ObjectId::from_hex(dmv(&r, &["rev-parse", "HEAD:sub/c.txt"]).trim())
        .unwrap();
    let stamp = dmv_repo::Stamp {
        time_ns: dmv_repo::now_ns(),
        present: true,
    };
    repo.copies()
        .note_locations(vec![dmv_repo::LocationRecord {
            key,
            replica: repo.copies().replica_id().unwrap(),
            stamp,
        }])
        .unwrap();
    // A ref table in a file (a writer keeping no table inline folds the list's into one), and a
    // small transaction's table inline in the list above it.
    let head = dmv_repo::store::ObjectId::from_hex(dmv(&r, &["rev-parse", "HEAD"]).trim()).unwrap();
    let plain =
        dmv_repo::dmv_refs::RefStore::open(&r.join(".dmv/refs"), Default::default()).unwrap();
    let mut tx = plain.transaction();
    tx.update(
        "refs/heads/filed",
        dmv_repo::dmv_refs::Expect::Absent,
        Some(head.0),
    )
    .unwrap();
    tx.commit("t <t@x>", (0, 0), "a table in a file").unwrap();
    dmv(&r, &["branch", "extra"]);
    assert!(std::fs::read_to_string(r.join(".dmv/refs/tables.list"))
        .unwrap()
        .contains(".ref\ninline "));
    let files = file_bytes(&r.join(".dmv"));
    assert!(
        files.keys().any(|k| k.ends_with("multi-pack-index"))
            && files.keys().filter(|k| k.ends_with(".idx")).count() >= 2,
        "{:?}",
        files.keys()
    );
    r
}

fn panicked(o: &Output) -> bool {
    o.status.code() == Some(101) || stderr(o).contains("panicked")
}

#[derive(Default, serde::Serialize)]
struct KindReport {
    expect: String,
    flips: u64,
    detected: u64,
    /// Flips fsck passed, with where they were (file and bit).
    undetected: Vec<String>,
    /// Flips `fsck --repair` was run on (kinds it can repair), and those after which fsck was clean and every file whole.
    repair_runs: u64,
    repaired: u64,
}

/// Kinds `fsck --repair` rebuilds (from what is whole, the working tree and the hub the specimen pushed to).
fn repairable(kind: &str) -> bool {
    kind.starts_with("pack")
        || kind == "multi-pack index"
        || kind == "dirstate"
        || kind.starts_with("location")
}

#[test]
fn every_flipped_bit_in_a_checksummed_file_is_reported_and_none_panics_or_lies() {
    let per_kind: u64 = std::env::var("DMV_FLIPS_PER_KIND")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let t = tempfile::tempdir().unwrap();
    let r = specimen(t.path());
    let dmv_dir = r.join(".dmv");
    let saved = file_bytes(&dmv_dir);
    let committed: Vec<(String, Vec<u8>)> = ["big.raw", "a.txt", "sub/b.txt", "sub/c.txt"]
        .iter()
        .map(|p| (p.to_string(), std::fs::read(r.join(p)).unwrap()))
        .collect();
    // Each pack's table of contents starts where its footer says.
    let pack_regions: BTreeMap<String, (usize, usize)> = saved
        .iter()
        .filter(|(k, _)| k.ends_with(".pack"))
        .map(|(k, b)| {
            let footer = &b[b.len() - 32 - 24..];
            (
                k.clone(),
                (
                    u64::from_le_bytes(footer[..8].try_into().unwrap()) as usize,
                    b.len(),
                ),
            )
        })
        .collect();
    // Every (file, byte) place a flip can land, by kind.
    let mut places: BTreeMap<String, (Expect, Vec<(String, usize)>)> = BTreeMap::new();
    for (rel, bytes) in &saved {
        let first_line_len = bytes
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |n| n + 1);
        for at in 0..bytes.len() {
            if let Some((kind, expect)) = kind_of(rel, at, first_line_len, &pack_regions) {
                places
                    .entry(kind)
                    .or_insert((expect, Vec::new()))
                    .1
                    .push((rel.clone(), at));
            }
        }
    }
    for kind in [
        "pack header",
        "pack payload",
        "pack table of contents",
        "pack footer",
        "pack index",
        "multi-pack index",
        "ref table (refs and reflog)",
        "dirstate",
        "location log",
        "location journal",
        "config",
        "HEAD",
    ] {
        assert!(places.contains_key(kind), "the specimen has no {kind}");
    }

    // What status, log and replica say of the undamaged repository: after a flip they say the same or fail.
    let status = dmv(&r, &["status", "--short"]);
    let log = dmv(&r, &["log", "--oneline"]);
    let replica = dmv(&r, &["replica"]);
    restore(&dmv_dir, &saved);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut report: BTreeMap<String, KindReport> = BTreeMap::new();
    let mut failures = Vec::new();
    for (kind, (expect, spots)) in &places {
        let entry = report.entry(kind.clone()).or_default();
        entry.expect = format!("{expect:?}");
        for _ in 0..per_kind {
            let (rel, at) = &spots[rng.below(spots.len() as u64) as usize];
            let bit = rng.below(8) as u8;
            let mut bytes = saved[rel].clone();
            bytes[*at] ^= 1 << bit;
            std::fs::write(dmv_dir.join(rel), &bytes).unwrap();
            let place = format!("{rel} byte {at} bit {bit}");

            let fsck = dmv_out(&r, &["fsck", "--full"]);
            let detected = !fsck.status.success();
            entry.flips += 1;
            if detected {
                entry.detected += 1;
            } else {
                entry.undetected.push(place.clone());
                if matches!(expect, Expect::Detected | Expect::Strict) {
                    failures.push(format!("{kind}: fsck --full passed a flip at {place}"));
                }
            }
            let mut outputs = vec![("fsck --full", fsck)];
            for (path, content) in &committed {
                let cat = dmv_out(&r, &["cat", &format!("HEAD:{path}")]);
                if cat.status.success() && cat.stdout != *content {
                    failures.push(format!("{kind}: cat HEAD:{path} printed other content than was committed after a flip at {place}"));
                }
                outputs.push(("cat", cat));
            }
            for (args, before) in [
                (&["status", "--short"][..], &status),
                (&["log", "--oneline"], &log),
                (&["replica"], &replica),
            ] {
                let out = dmv_out(&r, args);
                // Damaged text that names something else (HEAD naming another branch) reads as that, as in git; fsck must say so.
                let names_another = *expect == Expect::Validated && detected;
                if out.status.success()
                    && String::from_utf8_lossy(&out.stdout) != **before
                    && !names_another
                {
                    failures.push(format!(
                        "{kind}: {} said otherwise after a flip at {place}: {}",
                        args[0],
                        String::from_utf8_lossy(&out.stdout)
                    ));
                }
                outputs.push((args[0], out));
            }
            if repairable(kind) {
                entry.repair_runs += 1;
                let repair = dmv_out(&r, &["fsck", "--repair"]);
                let whole = committed.iter().all(|(path, content)| {
                    dmv_out(&r, &["cat", &format!("HEAD:{path}")]).stdout == *content
                });
                match repair.status.success() && whole {
                    true => entry.repaired += 1,
                    false => failures.push(format!(
                        "{kind}: fsck --repair left damage after a flip at {place}: {}",
                        stderr(&repair)
                    )),
                }
                outputs.push(("fsck --repair", repair));
            }
            for (cmd, out) in &outputs {
                if panicked(out) {
                    failures.push(format!(
                        "{kind}: {cmd} panicked after a flip at {place}: {}",
                        stderr(out)
                    ));
                }
                if !out.status.success()
                    && *cmd != "fsck --repair"
                    && stderr(out).trim().lines().count() != 1
                {
                    failures.push(format!(
                        "{kind}: {cmd} failed in more than one line after a flip at {place}: {}",
                        stderr(out)
                    ));
                }
            }
            restore(&dmv_dir, &saved);
        }
    }
    if let Ok(dir) = std::env::var("DMV_FAULTS_REPORT_DIR") {
        std::fs::write(
            Path::new(&dir).join("bitflips.json"),
            serde_json::to_vec_pretty(&report).unwrap(),
        )
        .unwrap();
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
